"""Publication: checkpoint -> deployment copy -> INT8 -> ONNX -> runtime -> gate -> active.

:func:`publish` runs the whole of SPEC 9 for one training network:

1. fold a copy (BatchNorm, branch scale; training-only heads dropped);
2. calibrate INT8 activation ranges on the calibration set and optionally
   fine-tune in the folded topology (:mod:`~chesszero.publish.quantize`);
   with ``qat_when=on_gate_failure`` the calibrated network is gated first
   and fine-tuning runs only when it fails (then steps 3-4 run again, and
   the first gate's report is kept as ``fidelity.calibrated.json``);
3. export ``fp32.onnx`` and ``int8.onnx`` (+ their torch states) into the
   output directory, each with its golden file (``publish.golden``) once gated;
4. :func:`gate_and_activate` the chosen precision: build it in the target
   runtime, compare it with the *source* network on the calibration set,
   write ``fidelity.json``, record the summary in the ONNX metadata and --
   only when every threshold holds -- atomically rewrite the activation
   state and swap the runtime to the new session (the same session that was
   measured, never a rebuild).

A failing artifact is never activated: the activation state and the
runtime's active session stay as they were, and the failure comes back in
the :class:`GateOutcome` (and the log) rather than as an exception.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from chesszero.config.publish import PublishConfig, QatWhen
from chesszero.fsio import file_sha256
from chesszero.model.network import ChessNet
from chesszero.publish.artifact import (
    ActiveArtifact,
    Artifact,
    Precision,
    load_artifact,
    read_activation,
    update_metadata,
    write_activation,
)
from chesszero.publish.calibration import CalibrationSet
from chesszero.publish.export import Provenance, export_onnx, save_deploy_state
from chesszero.publish.fidelity import FidelityReport, FidelityThresholds, measure_fidelity
from chesszero.publish.fold import fold_network
from chesszero.publish.golden import export_goldens
from chesszero.publish.quant_ops import QuantScheme
from chesszero.publish.quantize import BatchSource, QatSettings, quantize_network
from chesszero.publish.runtime import OrtRuntime, Runtime, Session, TorchRuntime
from chesszero.search.evaluators import Evaluator

__all__ = [
    "GateOutcome",
    "PublishResult",
    "PublishSettings",
    "gate_and_activate",
    "network_sha256",
    "publish",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PublishSettings:
    """Options of one publication (see :meth:`from_config` for the recipe's values)."""

    qat: QatSettings = QatSettings()
    thresholds: FidelityThresholds = FidelityThresholds()
    scheme: QuantScheme = QuantScheme.CPU
    """Integer grids of the target runtime: ``CPU`` (ONNX Runtime) or ``TENSORRT``."""
    precision: Precision = Precision.INT8
    """Which exported artifact is gated and activated."""
    batch_size: int = 256
    """Evaluation batch for calibration and the gate."""
    int8_stem: bool = False
    """Quantise the start block too (``publish.int8_stem``; SPEC 9 keeps it float)."""
    moves_left: bool = False
    """Keep the remaining-length head as a third output, plies left (for the search's
    moves-left utility, ``search.moves_left.slope`` > 0); the gate then compares it too."""
    qat_when: QatWhen = QatWhen.ALWAYS
    """Fine-tune every time, or only when the calibrated artifact fails the gate."""

    @classmethod
    def from_config(cls, cfg: PublishConfig, **overrides: object) -> PublishSettings:
        """Settings from ``params.yaml``'s ``publish`` section (QAT steps/LR, thresholds, INT8 stem)."""
        base = cls(
            qat=QatSettings(steps=cfg.qat_steps, lr=cfg.qat_lr),
            thresholds=FidelityThresholds.from_config(cfg),
            int8_stem=cfg.int8_stem,
            qat_when=cfg.qat_when,
        )
        return dataclasses.replace(base, **overrides)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GateOutcome:
    """What the gate decided about one artifact."""

    path: Path
    artifact: Artifact | None
    """The validated artifact (``None`` when the file itself is unusable; see ``error``)."""
    report: FidelityReport | None
    """``None`` when the artifact could not be loaded, built or evaluated (see ``error``)."""
    error: str | None
    activated: bool
    session: Session | None
    """The measured session (serving in the runtime when ``activated``)."""
    active: ActiveArtifact | None
    """The activation record after the decision (the previous one when rejected)."""

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.passed


@dataclass(frozen=True)
class PublishResult:
    """Everything one publication produced."""

    directory: Path
    fp32: Artifact
    int8: Artifact
    gate: GateOutcome
    qat_steps: int = 0
    """Fine-tuning steps run for the gated INT8 network (0: calibration only; a run whose
    result was not kept still counts)."""
    calibrated_gate: FidelityReport | None = None
    """With ``qat_when=on_gate_failure``: the failed report of the calibrated artifact that
    made fine-tuning run (``None`` when the calibrated artifact passed or QAT always ran)."""

    @property
    def activated(self) -> bool:
        return self.gate.activated


def network_sha256(net: torch.nn.Module) -> str:
    """Hash of a network's state dict (names, dtypes, shapes, bytes) for in-memory sources."""
    digest = hashlib.sha256()
    for name, tensor in sorted(net.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        digest.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.float().numpy().tobytes())
    return digest.hexdigest()


def _load_source(source: ChessNet | str | Path) -> tuple[ChessNet, str]:
    """The network to publish and its hash; a bad checkpoint file is a ``ValueError`` naming it."""
    if isinstance(source, ChessNet):
        return source, network_sha256(source)
    from chesszero.train.checkpoint import load_model

    path = Path(source)
    if not path.is_file():
        raise ValueError(f"{path}: checkpoint file not found")
    try:
        net = load_model(path)
    except Exception as error:  # torch.load raises pickle, zip and key errors on foreign files
        raise ValueError(f"{path}: not a usable training checkpoint ({type(error).__name__}: {error})") from error
    return net, file_sha256(path)


def _failure(summary: str) -> None:
    log.warning("publication gate rejected the artifact: %s", summary)


def gate_and_activate(
    artifact: Artifact | str | Path,
    reference: Evaluator,
    calib: CalibrationSet,
    *,
    runtime: Runtime,
    thresholds: FidelityThresholds,
    state_path: str | Path | None = None,
    report_path: str | Path | None = None,
    batch_size: int = 256,
) -> GateOutcome:
    """Build ``artifact`` in ``runtime``, measure it against ``reference``, activate if it passes.

    The report goes to ``report_path`` (default: ``fidelity.json`` next to the
    artifact) and its summary into the artifact's metadata.  On success the
    activation state at ``state_path`` (when given) names the artifact and
    ``runtime`` serves the measured session.  Loading, building and
    evaluation errors (including an unreadable or foreign file) are logged and
    returned as a rejected outcome, never raised.
    """
    previous = read_activation(state_path) if state_path is not None else None
    path = artifact.path if isinstance(artifact, Artifact) else Path(artifact)
    try:
        loaded = artifact if isinstance(artifact, Artifact) else load_artifact(path)
        session = runtime.build(loaded)
        report = measure_fidelity(
            reference, session, calib, thresholds, batch_size=batch_size,
            candidate_name=f"{path} [{runtime.name}]", reference_name="source network",
        )
    except Exception as error:  # the gate's contract: a bad artifact is reported, never a crash
        message = f"{type(error).__name__}: {error}"
        _failure(message)
        known = artifact if isinstance(artifact, Artifact) else None
        return GateOutcome(path, known, None, message, False, None, previous)
    report.write(report_path or path.with_name("fidelity.json"))
    final = update_metadata(path, fidelity=report.summary())
    session.artifact = final  # metadata-only rewrite: the measured weights are unchanged
    if not report.passed:
        _failure("; ".join(report.failures))
        return GateOutcome(path, final, report, None, False, session, previous)
    active = write_activation(state_path, final, report.summary()) if state_path is not None else None
    runtime.activate(session)
    log.info("activated %s (agreement %.4f, KL %.5f, WDL MAE %.5f%s)",
             path, report.agreement, report.kl_mean, report.wdl_mae,
             "" if report.moves_left_mae is None else f", moves-left MAE {report.moves_left_mae:.2f} plies")
    return GateOutcome(path, final, report, None, True, session, active)


def publish(
    source: ChessNet | str | Path,
    out_dir: str | Path,
    calib: CalibrationSet,
    *,
    settings: PublishSettings | None = None,
    runtime: Runtime | None = None,
    state_path: str | Path | None = None,
    batches: BatchSource | None = None,
    tune: CalibrationSet | None = None,
) -> PublishResult:
    """Publish a training network (or a checkpoint file) into ``out_dir`` and gate it.

    ``calib`` is the fidelity gate's set. ``tune`` sets the activation ranges,
    is the default QAT data and decides whether QAT is kept; give positions
    the gate does not score (replay rows, random play: see ``calibration``).
    Without it the gate's own set is used and the artifact's ``tuning_source``
    says so. ``runtime`` defaults to ONNX Runtime on CPU; ``batches``
    overrides the QAT fine-tuning positions.  The source network
    is never modified.  A missing or unreadable checkpoint raises ``ValueError``
    naming the file; everything after export goes through the gate, which
    reports failures instead of raising.
    """
    settings = settings or PublishSettings()
    runtime = runtime or OrtRuntime()
    net, checkpoint_hash = _load_source(source)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if tune is None:
        tune = dataclasses.replace(calib, source=f"the fidelity gate's own set ({calib.source}; not held out)")
    provenance = Provenance(checkpoint_hash, calib.sha256, len(calib), tune.sha256, tune.source)
    float_net = fold_network(net, int8_stem=settings.int8_stem, moves_left=settings.moves_left)
    deferred = settings.qat_when is QatWhen.ON_GATE_FAILURE and settings.qat.steps > 0
    first_qat = dataclasses.replace(settings.qat, steps=0) if deferred else settings.qat
    int8_net = quantize_network(float_net, tune, scheme=settings.scheme, qat=first_qat, batches=batches)
    save_deploy_state(float_net, out / "fp32.pt")
    save_deploy_state(int8_net, out / "int8.pt")
    fp32 = export_onnx(float_net, out / "fp32.onnx", provenance, torch_state="fp32.pt")
    int8 = export_onnx(int8_net, out / "int8.onnx", provenance, torch_state="int8.pt")
    reference = TorchRuntime(device=net.stem_conv.weight.device).session_for(net, moves_left=settings.moves_left)

    def gate(candidate: Artifact) -> GateOutcome:
        return gate_and_activate(
            candidate, reference, calib, runtime=runtime, thresholds=settings.thresholds,
            state_path=state_path, report_path=out / "fidelity.json", batch_size=settings.batch_size,
        )

    outcome = gate(int8 if settings.precision is Precision.INT8 else fp32)
    qat_steps, calibrated_gate = first_qat.steps, None
    if deferred and settings.precision is Precision.INT8 and outcome.report is not None and not outcome.passed:
        calibrated_gate = outcome.report
        calibrated_gate.write(out / "fidelity.calibrated.json")
        log.info("the calibrated artifact failed the gate (%s); fine-tuning %d steps",
                 "; ".join(calibrated_gate.failures), settings.qat.steps)
        int8_net = quantize_network(float_net, tune, scheme=settings.scheme, qat=settings.qat, batches=batches)
        save_deploy_state(int8_net, out / "int8.pt")
        int8 = export_onnx(int8_net, out / "int8.onnx", provenance, torch_state="int8.pt")
        outcome, qat_steps = gate(int8), settings.qat.steps
    if outcome.artifact is not None:  # re-read: the gate added the fidelity summary
        if settings.precision is Precision.INT8:
            int8 = outcome.artifact
        else:
            fp32 = outcome.artifact
    export_goldens([fp32.path, int8.path], calib.source)  # after the gate's metadata rewrite
    return PublishResult(directory=out, fp32=fp32, int8=int8, gate=outcome, qat_steps=qat_steps,
                         calibrated_gate=calibrated_gate)
