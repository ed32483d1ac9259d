"""Fit probe: how fast does a fresh network fit a campaign's own replay rows?

A learning run takes an hour; this takes minutes. It materialises the
searched rows of generations FIRST..LAST of a campaign folder exactly as the
replay store would (:func:`chesszero.replay.convert.shard_rows`, with the
recipe's value blend at each row's generation), holds out the last
generation (the network's future: rows it never trains on), and trains a
fresh network of a given size on the rest with the recipe's trainer
(optimizer, LR schedule, loss weights, reflection), scoring both sets every
``every`` steps: the policy and value losses of SPEC 5 and how often the
network's top legal move is the target's top move; with ``endings``, also how
often its top move mates where a mate in one is on the board and stalemates
where a stalemating move is.

docs/learning.md used it to choose between SGD and AdamW before spending two
learning runs on it. It measures optimisation on a fixed set, not learning in
a campaign, whose targets move every generation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from chesszero.config.schema import Reflection, ReplayConfig, TrainConfig
from chesszero.evaluate.mate_recall import ReplayScan, shard_paths
from chesszero.replay.rows import RowBatch

__all__ = ["EndingScore", "FitPoint", "FitScore", "ending_scans", "fit_curve", "held_out_split", "run_rows"]


@dataclass(frozen=True)
class FitScore:
    """A network on a set of rows: SPEC 5 losses and top-move agreement."""

    rows: int
    policy_loss: float
    value_loss: float
    top1: float
    """Share of rows where the network's top legal move is the target's top move."""


@dataclass(frozen=True)
class EndingScore:
    """A network on the positions of a set of generations where some legal move
    checkmates or stalemates (from :func:`chesszero.evaluate.mate_recall.scan_replay`)."""

    mate_positions: int
    mate_top: float | None
    """Share of the mate positions where the network's top legal move mates."""
    stalemate_positions: int
    stalemate_top: float | None
    """Share of the stalemate positions where the network's top legal move stalemates."""
    stalemate_mass: float | None
    """Mean softmax mass the network puts on the stalemating moves there."""


@dataclass(frozen=True)
class FitPoint:
    step: int
    seconds: float
    train: FitScore
    held_out: FitScore
    train_endings: EndingScore | None = None
    held_out_endings: EndingScore | None = None


def run_rows(run_dir: str | Path, first: int, last: int, replay: ReplayConfig) -> np.ndarray:
    """The replay rows (``ROW_DTYPE``) of generations ``first..last`` of a campaign
    folder, each generation's targets built with its ``value_blend``."""
    from chesszero.replay.convert import shard_rows
    from chesszero.replay.materialize import target_options_from_config

    parts = []
    for path in shard_paths(run_dir, first, last):
        generation = int(path.parent.name[len("gen_"):])
        rows, _ = shard_rows(path, target_options_from_config(replay, generation))
        parts.append(rows)
    return np.concatenate(parts)


def held_out_split(rows: np.ndarray, held_out_generation: int) -> tuple[RowBatch, RowBatch]:
    """(training rows, rows of ``held_out_generation``); both must be non-empty."""
    held = rows["generation"] == held_out_generation
    if not held.any() or held.all():
        have = sorted({int(g) for g in np.unique(rows["generation"])})
        raise ValueError(f"need rows of generation {held_out_generation} and of others to train on; "
                         f"the rows are of generations {have}")
    return (RowBatch.from_rows(rows[~held], np.flatnonzero(~held)),
            RowBatch.from_rows(rows[held], np.flatnonzero(held)))


def _score(model: torch.nn.Module, rows: RowBatch, cfg: TrainConfig, limit: int) -> FitScore:
    from chesszero.train.batch import to_train_batch
    from chesszero.train.loss import compute_loss
    from chesszero.train.sources import take_rows

    n = min(limit, len(rows))
    batch = to_train_batch(take_rows(rows, np.arange(n)), mode=Reflection.OFF)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(batch.planes)
        terms = compute_loss(out, batch, cfg.loss_weights)
        top = out.policy.masked_fill(~batch.legal, float("-inf")).argmax(1)
        target_top = batch.policy_ids.gather(1, batch.policy_probs.argmax(1, keepdim=True)).squeeze(1)
    model.train(was_training)
    return FitScore(rows=n, policy_loss=float(terms.policy), value_loss=float(terms.value),
                    top1=float((top == target_top).float().mean()))


def ending_scans(run_dir: str | Path, first: int, last: int) -> tuple[ReplayScan, ReplayScan]:
    """The mate and stalemate positions of generations ``first..last-1`` and of
    ``last`` (held out), replayed from the campaign's shards."""
    from chesszero.evaluate.mate_recall import scan_replay

    return (scan_replay(shard_paths(run_dir, first, last - 1)), scan_replay(shard_paths(run_dir, last, last)))


def _torch_policy(model: torch.nn.Module) -> Callable[[np.ndarray], np.ndarray]:
    def policy(planes: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model(torch.from_numpy(np.ascontiguousarray(planes, dtype=np.float32))).policy.float().numpy()
    return policy


def _ending_score(model: torch.nn.Module, scan: ReplayScan) -> EndingScore:
    from chesszero.evaluate.mate_recall import mate_recall, stalemate_risk

    was_training = model.training
    model.eval()
    policy = _torch_policy(model)
    mates = mate_recall(scan.rows, scan.mates, policy)
    stale = stalemate_risk(scan.rows, scan.stalemates, policy)
    model.train(was_training)
    return EndingScore(
        mate_positions=mates.positions, mate_top=mates.top_mates / mates.positions if mates.positions else None,
        stalemate_positions=stale.positions,
        stalemate_top=stale.top_stalemates / stale.positions if stale.positions else None,
        stalemate_mass=stale.mass_mean)


def fit_curve(train: RowBatch, held_out: RowBatch, cfg: TrainConfig, size: str, *, steps: int,
              every: int, score_rows: int = 4000, seed: int = 0,
              endings: tuple[ReplayScan, ReplayScan] | None = None,
              on_point: Callable[[FitPoint], None] | None = None,
              on_step: Callable[[int], None] | None = None,
              on_done: Callable[[torch.nn.Module], None] | None = None) -> list[FitPoint]:
    """Trains a fresh ``size`` network (``cfg``'s optimizer, schedule, seed) for
    ``steps`` steps on ``train``; scores it on the first ``score_rows`` rows of
    each set at step 0 and every ``every`` steps (and at the end). With
    ``endings`` (:func:`ending_scans`), each point also scores the network's
    top move on the training and held-out positions with a mate or a
    stalemate on the board (the rows ``train.loss_weights.mate_rows`` /
    ``stalemate_rows`` weigh)."""
    from chesszero.train.sources import ArraySampler, SampledBatches
    from chesszero.train.trainer import Trainer

    if steps < 0 or every < 1 or score_rows < 1:
        raise ValueError(f"need steps >= 0, every >= 1 and score_rows >= 1, got {steps}, {every}, {score_rows}")
    cfg = cfg.model_copy(update={"world_size": 1})
    if len(train) < cfg.global_batch:
        raise ValueError(f"{len(train)} training rows cannot fill a batch of {cfg.global_batch}")
    trainer = Trainer(cfg, size)
    source = SampledBatches(ArraySampler(train, seed=seed), global_batch=cfg.global_batch,
                            reflection=cfg.reflection, seed=seed)
    points: list[FitPoint] = []
    start = time.perf_counter()

    def score(step: int) -> None:
        point = FitPoint(step, time.perf_counter() - start, _score(trainer.model, train, cfg, score_rows),
                         _score(trainer.model, held_out, cfg, score_rows),
                         *((None, None) if endings is None else
                           (_ending_score(trainer.model, endings[0]), _ending_score(trainer.model, endings[1]))))
        points.append(point)
        if on_point is not None:
            on_point(point)

    score(0)
    done = 0
    while done < steps:
        chunk = min(every - done % every, steps - done)
        trainer.run_quantum(source, steps=chunk, on_step=None if on_step is None else
                            (lambda k, base=done: on_step(base + k)))
        done += chunk
        if done % every == 0 or done == steps:
            score(done)
    if on_done is not None:
        on_done(trainer.model)
    return points
