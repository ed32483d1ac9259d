"""Distillation of a compact student from a frozen teacher (issue 11; the
paper's sections 4.3.8 and 8.2).

The student is an ordinary :class:`~chesszero.model.ChessNet` of a smaller
size trained by the ordinary :class:`~chesszero.train.Trainer` on rows of one
or more frozen replay snapshots; only the loss differs
(:class:`DistillLoss`), chosen by ``distill.supervision``:

- ``replay``: the SPEC 5 loss on the rows' own targets (sparse visits,
  blended outcomes, next policy, remaining length);
- ``teacher``: the teacher's predictions on the same (possibly reflected)
  positions, computed on the fly by the frozen teacher in eval mode:
  ``T^2 KL(teacher || student)`` of the policies softmaxed at temperature
  ``T`` over the legal moves, the cross-entropy of the student's WDL against
  the teacher's WDL probabilities, ``KL`` of the next-policy heads (all
  actions) and smooth-L1 to the teacher's remaining length; every row counts;
- ``mix``: head by head ``w * teacher + (1 - w) * replay`` with
  ``w = distill.teacher_weight``.

The loss weights of ``train.loss_weights`` weigh the heads in every mode.
Every :data:`HOLDOUT_EVERY`-th row of the snapshot (by ``seq``) is held out
of training; :func:`compare_with_teacher` measures the student against the
teacher on those rows. :func:`distill_student` runs the steps in chunks of
``distill.checkpoint_every`` and writes a checkpoint after each (model,
optimizer, sampler, and the identity of teacher, snapshots and recipe in
``extra``), so a killed run resumes where it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from chesszero.config.distill import DistillConfig, Supervision
from chesszero.config.schema import LossWeights, OptimizerKind, TrainConfig
from chesszero.fsio import file_sha256
from chesszero.model.network import ChessNet, NetOutput, count_parameters
from chesszero.replay.rows import RowBatch
from chesszero.train.batch import TrainBatch, to_train_batch
from chesszero.train.checkpoint import load_checkpoint, load_model
from chesszero.train.loss import ILLEGAL_LOGIT, LossTerms, compute_loss
from chesszero.train.sources import ArraySampler, SampledBatches, take_rows
from chesszero.train.trainer import Trainer

__all__ = [
    "HOLDOUT_EVERY",
    "MATCH_SETTINGS",
    "DistillJob",
    "DistillLoss",
    "DistillOutcome",
    "TeacherAgreement",
    "compare_with_teacher",
    "distill_student",
    "snapshot_rows",
    "split_holdout",
    "student_train_config",
]

HOLDOUT_EVERY = 20
"""Every 20th snapshot row (by ``seq``) is held out of training for :func:`compare_with_teacher`."""

MATCH_SETTINGS = ("openings", "visits", "speed_positions")
"""``distill`` fields that only concern the matches: changing them keeps the trained student."""


def _legal_log_softmax(logits: torch.Tensor, legal: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    return torch.log_softmax(logits.float().masked_fill(~legal, ILLEGAL_LOGIT) / temperature, dim=1)


def _kl(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """Per-row ``KL(p || q)`` from log-probabilities (0 * log 0 taken as 0)."""
    p = log_p.exp()
    return (p * (log_p - log_q)).sum(dim=1)


class DistillLoss:
    """The student's loss of one batch (module docstring); a ``Trainer`` loss."""

    def __init__(self, teacher: ChessNet | None, supervision: Supervision, weights: LossWeights, *,
                 teacher_weight: float = 0.5, temperature: float = 1.0) -> None:
        if supervision is not Supervision.REPLAY and teacher is None:
            raise ValueError(f"supervision {supervision.value!r} needs a teacher network")
        if teacher is not None and not teacher.has_aux_heads:
            raise ValueError("the teacher network needs its training heads (load_model(aux_heads=True))")
        self.teacher = teacher.eval() if teacher is not None else None
        if self.teacher is not None:
            for p in self.teacher.parameters():
                p.requires_grad_(False)
        self.supervision = supervision
        self.weights = weights
        self.teacher_weight = {Supervision.REPLAY: 0.0, Supervision.TEACHER: 1.0,
                               Supervision.MIX: teacher_weight}[supervision]
        self.temperature = temperature

    def teacher_terms(self, out: NetOutput, batch: TrainBatch) -> list[torch.Tensor]:
        """Per-head means against the teacher's predictions: policy, value, next policy, length."""
        assert self.teacher is not None
        if out.next_policy is None or out.length is None:
            raise ValueError("DistillLoss needs the student's training heads")
        with torch.no_grad():
            self.teacher.to(batch.planes.device)
            t = self.teacher(batch.planes)
        assert t.next_policy is not None and t.length is not None
        temp = self.temperature
        policy = _kl(_legal_log_softmax(t.policy, batch.legal, temp),
                     _legal_log_softmax(out.policy, batch.legal, temp)) * temp * temp
        value = -(torch.softmax(t.wdl.float(), dim=1) * torch.log_softmax(out.wdl.float(), dim=1)).sum(dim=1)
        next_policy = _kl(torch.log_softmax(t.next_policy.float(), dim=1),
                          torch.log_softmax(out.next_policy.float(), dim=1))
        length = F.smooth_l1_loss(out.length.float(), t.length.float(), reduction="none")
        return [x.mean() for x in (policy, value, next_policy, length)]

    def __call__(self, out: NetOutput, batch: TrainBatch) -> LossTerms:
        w = self.teacher_weight
        if w == 0.0:
            return compute_loss(out, batch, self.weights)
        terms = self.teacher_terms(out, batch)
        if w < 1.0:
            replay = compute_loss(out, batch, self.weights)
            own = [replay.policy, replay.value, replay.next_policy, replay.length]
            terms = [w * t + (1.0 - w) * r for t, r in zip(terms, own, strict=True)]
        ws = self.weights
        total = ws.policy * terms[0] + ws.value * terms[1] + ws.next_policy * terms[2] + ws.length * terms[3]
        return LossTerms(total, *terms)


def student_train_config(train: TrainConfig, distill: DistillConfig) -> TrainConfig:
    """The recipe's optimizer settings (momentum, weight decay, clipping, reflection,
    loss weights) with the distillation's batch, LR schedule and seed, one process;
    always SGD, the optimizer ``distill.lr`` is scaled for."""
    return train.model_copy(update={"optimizer": OptimizerKind.SGD,
        "steps_per_quantum": distill.checkpoint_every, "global_batch": distill.global_batch,
        "world_size": 1, "micro_batches": 1, "lr": distill.lr, "seed": distill.seed})


def snapshot_rows(snapshots: Sequence[Path]) -> RowBatch:
    """The rows of one or more replay snapshots, each ``seq`` once, oldest first."""
    from chesszero.replay.snapshot import read_snapshot

    if not snapshots:
        raise ValueError("distillation needs at least one replay snapshot")
    parts = [np.asarray(read_snapshot(path)) for path in snapshots]
    rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
    _, first = np.unique(rows["seq"], return_index=True)
    rows = rows[np.sort(first)]
    rows = rows[np.argsort(rows["seq"], kind="stable")]
    if len(rows) == 0:
        raise ValueError(f"the snapshots {[str(p) for p in snapshots]} hold no rows")
    return RowBatch.from_rows(rows, np.arange(len(rows)))


def split_holdout(rows: RowBatch) -> tuple[RowBatch, RowBatch]:
    """(training rows, held-out rows): every :data:`HOLDOUT_EVERY`-th ``seq`` is held out."""
    held = rows.seq % HOLDOUT_EVERY == HOLDOUT_EVERY - 1
    return take_rows(rows, np.flatnonzero(~held)), take_rows(rows, np.flatnonzero(held))


@dataclass(frozen=True)
class TeacherAgreement:
    """The student against the teacher on held-out positions."""

    positions: int
    top1_agreement: float
    """Share of positions where both networks' most likely legal move is the same."""
    policy_kl: float
    """Mean KL(teacher || student) of the legal-move policies."""
    wdl_mae: float
    """Mean absolute difference of the W/D/L probabilities."""
    student_search_ce: float
    """Cross-entropy of the student's policy against the rows' search policies."""
    teacher_search_ce: float
    """The same for the teacher."""


@torch.no_grad()
def compare_with_teacher(student: ChessNet, teacher: ChessNet, rows: RowBatch, *,
                         batch_size: int = 256) -> TeacherAgreement:
    """Agreement, KL, WDL error and search-target cross-entropies on ``rows`` (no reflection)."""
    if len(rows) == 0:
        raise ValueError("compare_with_teacher needs at least one row")
    student, teacher = student.eval(), teacher.eval()
    sums = np.zeros(5)
    for start in range(0, len(rows), batch_size):
        part = to_train_batch(take_rows(rows, np.arange(start, min(start + batch_size, len(rows)))))
        s, t = student(part.planes), teacher(part.planes)
        ls, lt = _legal_log_softmax(s.policy, part.legal), _legal_log_softmax(t.policy, part.legal)
        sums[0] += float((ls.argmax(dim=1) == lt.argmax(dim=1)).sum())
        sums[1] += float(_kl(lt, ls).sum())
        sums[2] += float((torch.softmax(s.wdl, 1) - torch.softmax(t.wdl, 1)).abs().mean(dim=1).sum())
        sums[3] += float(-(part.policy_probs * ls.gather(1, part.policy_ids)).sum(dim=1).sum())
        sums[4] += float(-(part.policy_probs * lt.gather(1, part.policy_ids)).sum(dim=1).sum())
    mean = sums / len(rows)
    return TeacherAgreement(len(rows), *(float(x) for x in mean))


@dataclass(frozen=True)
class DistillJob:
    """Inputs of one distillation."""

    train: TrainConfig
    distill: DistillConfig
    teacher: Path
    """The teacher's training checkpoint (frozen: read, never written)."""
    snapshots: tuple[Path, ...]
    checkpoint: Path
    """The student's checkpoint (written every ``checkpoint_every`` steps; resumed when present)."""

    def identity(self) -> dict[str, Any]:
        """What a resumed checkpoint must have been trained from."""
        return {"teacher_sha256": file_sha256(self.teacher),
                "snapshots": [file_sha256(Path(p) / "meta.json") for p in self.snapshots],
                "distill": self.distill.model_dump(mode="json", exclude=set(MATCH_SETTINGS))}


@dataclass(frozen=True)
class DistillOutcome:
    """What :func:`distill_student` produced."""

    checkpoint: Path
    student_size: str
    teacher_size: str
    student_parameters: int
    teacher_parameters: int
    rows: int
    held_out: int
    steps: int
    quanta: list[dict[str, float]]
    """Statistics of each chunk of steps (``QuantumStats.as_dict``), in order."""
    agreement: TeacherAgreement

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["checkpoint"] = str(self.checkpoint)
        return data


def distill_student(job: DistillJob, *, on_step: Callable[[int], None] | None = None) -> DistillOutcome:
    """Trains (or resumes) the student to ``distill.steps`` steps; see the module docstring.

    ``on_step(k)`` is called with the student's optimizer step after each step.
    Refuses a student checkpoint trained from another teacher, snapshot or
    distillation recipe (``ValueError`` naming it).
    """
    cfg = job.distill
    if not job.teacher.is_file():
        raise ValueError(f"teacher checkpoint not found: {str(job.teacher)!r}")
    teacher = load_model(job.teacher)
    teacher_parameters = count_parameters(teacher)
    rows, held = split_holdout(snapshot_rows(job.snapshots))
    if len(rows) < cfg.global_batch:
        raise ValueError(f"the snapshots hold {len(rows)} training rows, fewer than distill.global_batch "
                         f"{cfg.global_batch}")
    train_cfg = student_train_config(job.train, cfg)
    loss = DistillLoss(teacher if cfg.supervision is not Supervision.REPLAY else None, cfg.supervision,
                       train_cfg.loss_weights, teacher_weight=cfg.teacher_weight, temperature=cfg.temperature)
    trainer = Trainer(train_cfg, cfg.student_size, loss=loss)
    source = SampledBatches(ArraySampler(rows, seed=cfg.seed), global_batch=cfg.global_batch,
                            reflection=train_cfg.reflection, seed=cfg.seed)
    identity = job.identity()
    quanta: list[dict[str, float]] = []
    if job.checkpoint.exists():
        extra = trainer.restore(load_checkpoint(job.checkpoint))
        if extra.get("distill") != identity:
            raise ValueError(f"{job.checkpoint}: a student checkpoint trained from another teacher, snapshot "
                             "or distill recipe; remove it or write the student elsewhere")
        source.load_state_dict(extra["source"])
        quanta = list(extra.get("quanta", []))
    while trainer.step < cfg.steps:
        n = min(cfg.checkpoint_every, cfg.steps - trainer.step)
        start = trainer.step
        stats = trainer.run_quantum(source, n, on_step=None if on_step is None else
                                    (lambda k, start=start: on_step(start + k)))
        if not math.isfinite(stats.loss_total):
            raise RuntimeError(f"distillation diverged at step {trainer.step}: loss {stats.loss_total}")
        quanta.append(stats.as_dict(prefix=""))
        trainer.save(job.checkpoint, extra={"distill": identity, "source": source.state_dict(), "quanta": quanta})
    student = load_model(job.checkpoint)
    agreement = compare_with_teacher(student, teacher, held) if len(held) else TeacherAgreement(
        0, math.nan, math.nan, math.nan, math.nan, math.nan)
    return DistillOutcome(job.checkpoint, student.size.name, teacher.size.name, count_parameters(student),
                          teacher_parameters, len(rows), len(held), trainer.step, quanta, agreement)
