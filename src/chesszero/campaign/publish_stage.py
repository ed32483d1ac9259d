"""Publication phase: checkpoint -> artifact -> fidelity gate -> promotion
gate -> activation, recorded in MLflow (metrics, reports, registered model
version with the `active` alias).

An artifact that fails fidelity is never activated. A routine update that
passes is activated (the paper gates routine updates on fidelity only). With
``campaign.promotion_matches`` a passing artifact is instead a candidate that
becomes active after two consecutive paired matches scoring >= 0.48 against
the active artifact (SPEC 10, the paper's gate for candidates such as a
larger network). Each step is idempotent: a rerun after a crash reuses the
published artifact (marker ``publish.json``), resumes the gate's match
sequence and does not register a version twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign
from chesszero.campaign.state import CampaignState, write_json_atomic
from chesszero.campaign.tracking import Tracker


def _tuning_set(campaign: Campaign, generation: int | None) -> Any:
    """Positions for activation ranges and QAT that the fidelity gate never
    scores: replay rows (seeded per generation), or random play before any."""
    from chesszero.publish.calibration import random_play_set, tuning_set_from_replay

    cfg = campaign.cfg
    n, seed = cfg.publish.calibration_positions, cfg.campaign.seed * 1009 + (generation or 0)
    if campaign.paths.replay.exists():
        try:
            return tuning_set_from_replay(campaign.paths.replay, limit=n, seed=seed)
        except ValueError:  # no valid rows yet
            pass
    return random_play_set(n, seed=seed)


def publish_checkpoint(campaign: Campaign, generation: int | None, checkpoint: Path | None = None,
                       out: Path | None = None) -> Any:
    """Fold, QAT, export and fidelity-gate `checkpoint` (default: the
    training checkpoint) into `out` (default: the generation's artifact
    folder), gated in the runtime the actors will use (``inference.backend``),
    on that runtime's INT8 grids."""
    from chesszero.publish import PublishSettings, load_calibration_set, publish
    from chesszero.publish.backends import publication_scheme

    cfg = campaign.cfg
    backend = cfg.inference.backend.value
    calib = load_calibration_set(campaign.root / "data" / "calibration" / "positions.jsonl",
                                 limit=cfg.publish.calibration_positions)
    settings = PublishSettings.from_config(cfg.publish, scheme=publication_scheme(backend),
                                           moves_left=cfg.search.moves_left.enabled)
    return publish(checkpoint or campaign.paths.checkpoint, out or campaign.paths.artifact_dir(generation), calib,
                   settings=settings, runtime=campaign.gate_runtime(backend), state_path=None,
                   tune=_tuning_set(campaign, generation))


def fidelity_metrics(result: Any) -> dict[str, float]:
    report = result.gate.report
    out = {M.fidelity_key("passed"): float(result.gate.passed), M.PUBLISH_QAT_STEPS: float(result.qat_steps)}
    if report is not None:
        out[M.fidelity_key("agreement")] = float(report.agreement)
        out[M.fidelity_key("kl")] = float(report.kl_mean)
        out[M.fidelity_key("wdl_mae")] = float(report.wdl_mae)
        if report.moves_left_mae is not None:
            out[M.fidelity_key("moves_left_mae")] = float(report.moves_left_mae)
    return out


def activate(campaign: Campaign, artifact: Any, tracker: Tracker, label: str) -> str:
    """Activates the artifact (activation file, then the registry's alias).
    A rerun after a kill before the state was saved finds it active already
    and leaves the file as it is (its ``previous`` stays the one before)."""
    from chesszero.publish import read_activation, write_activation

    current = read_activation(campaign.paths.activation)
    if current is None or current.path.resolve() != Path(artifact.path).resolve():
        write_activation(campaign.paths.activation, artifact)
    tracker.register_active(Path(artifact.path), label)
    return str(Path(artifact.path).resolve())


def publish_initial(campaign: Campaign, tracker: Tracker) -> tuple[str, int]:
    """Publishes the step-0 network; it must pass fidelity to start a campaign."""
    result = publish_checkpoint(campaign, None)
    tracker.log_metrics({k.replace("publish/", "publish/initial_"): v for k, v in fidelity_metrics(result).items()},
                        step=0)
    tracker.log_artifact(result.directory / "fidelity.json", "artifacts/initial")
    if not result.gate.passed:
        reason = result.gate.error or (result.gate.report.failures if result.gate.report else "unknown")
        raise RuntimeError(f"the initial network failed the fidelity gate: {reason}")
    return activate(campaign, result.int8, tracker, "initial"), -1


def _gate_matches(campaign: Campaign, candidate: str, active: str, generation: int) -> bool:
    """Paired searched matches candidate vs active until the gate decides:
    promoted after `promotion_consecutive` passes; a failing score ends the
    attempt for this generation; errored matches do not count and are retried
    (at most twice). Resumes the sequence recorded in the gate file."""
    from chesszero.campaign.head_to_head import paired_match
    from chesszero.evaluate.gate import MatchStatus, PromotionGate

    ev = campaign.cfg.evaluate
    gate = PromotionGate.load(campaign.paths.gate) if campaign.paths.gate.exists() else None
    if gate is None or gate.candidate != candidate:
        gate = PromotionGate(candidate=candidate, active=active, threshold=ev.promotion_score,
                             required_passes=ev.promotion_consecutive)
    errored = 0
    while not gate.promoted and errored <= 2:
        completed = [e for e in gate.history if e.status is MatchStatus.COMPLETED]
        if completed and completed[-1].passed is False:
            break
        k = len(gate.history)
        try:
            result = paired_match(campaign, candidate, active, index=k, event=f"promotion {k}",
                                  out=campaign.paths.evals(generation) / f"promotion_{k}.pgn")
            status = MatchStatus.COMPLETED
        except Exception:  # noqa: BLE001 - an errored match does not count (SPEC 10)
            result, status = None, MatchStatus.ERRORED
            errored += 1
        gate.record(f"gen{generation:04d}-promo{k}", score=result.score if result else None, status=status)
        gate.save(campaign.paths.gate)
    return gate.promoted


def publish_once(campaign: Campaign, generation: int, tracker: Tracker, checkpoint: Path | None = None,
                 out: Path | None = None, label: str | None = None) -> dict[str, Any]:
    """Publishes `checkpoint` into `out` once: the marker `publish.json` there
    (keyed by the checkpoint's SHA-256) makes a rerun reuse the artifact.
    Returns the marker: passed, artifact path, fidelity metrics."""
    from chesszero.fsio import file_sha256

    checkpoint = checkpoint or campaign.paths.checkpoint
    out = out or campaign.paths.artifact_dir(generation)
    digest = file_sha256(checkpoint)
    path = out / "publish.json"
    if path.exists():
        marker: dict[str, Any] = json.loads(path.read_text())
        if marker["checkpoint_sha256"] == digest:
            return marker
    result = publish_checkpoint(campaign, generation, checkpoint, out)
    marker = {"checkpoint_sha256": digest, "passed": result.gate.passed,
              "artifact": str(Path(result.int8.path).resolve()), "metrics": fidelity_metrics(result)}
    label = label or f"gen_{generation:04d}"
    tracker.log_artifact(result.directory / "fidelity.json", f"artifacts/{label}")
    tracker.log_artifact(Path(result.int8.path), f"artifacts/{label}")
    write_json_atomic(path, marker)
    return marker


def publish_generation(campaign: Campaign, state: CampaignState, tracker: Tracker) -> dict[str, float]:
    """Publishes this generation's checkpoint and activates it when it passes."""
    g = state.generation
    marker = publish_once(campaign, g, tracker)
    metrics = dict(marker["metrics"])
    candidate = marker["artifact"]
    if not marker["passed"]:
        metrics["publish/activated"] = 0.0
        return metrics
    if state.active_artifact == candidate:  # activated before a crash
        metrics["publish/activated"] = 1.0
        return metrics
    if campaign.cfg.campaign.promotion_matches:
        promoted = _gate_matches(campaign, candidate, str(state.active_artifact), g)
    else:
        promoted = True
    metrics["publish/activated"] = float(promoted)
    if promoted:
        from chesszero.publish import load_artifact

        state.active_artifact = activate(campaign, load_artifact(candidate), tracker, f"gen{g:04d}")
        state.active_generation = g
        campaign.save_state(state)
    return metrics
