"""Publication phase: checkpoint -> artifact -> fidelity gate -> promotion
gate -> activation, recorded in MLflow (metrics, reports, registered model
version with the `active` alias).

An artifact that fails fidelity is never activated. One that passes is a
candidate: it becomes active after two consecutive paired matches scoring
>= 0.48 against the active artifact (SPEC 10); the first artifact of a
campaign has nothing to play against and is activated on fidelity alone.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign
from chesszero.campaign.state import CampaignState
from chesszero.campaign.tracking import Tracker


def _publish_checkpoint(campaign: Campaign, generation: int | None) -> Any:
    from chesszero.publish import PublishSettings, load_calibration_set, publish

    cfg = campaign.cfg
    calib = load_calibration_set(campaign.root / "data" / "calibration" / "positions.jsonl",
                                 limit=cfg.publish.calibration_positions)
    return publish(campaign.paths.checkpoint, campaign.paths.artifact_dir(generation), calib,
                   settings=PublishSettings.from_config(cfg.publish), state_path=None)


def _fidelity_metrics(result: Any) -> dict[str, float]:
    report = result.gate.report
    out = {M.fidelity_key("passed"): float(result.gate.passed)}
    if report is not None:
        out[M.fidelity_key("agreement")] = float(report.agreement)
        out[M.fidelity_key("kl")] = float(report.kl_mean)
        out[M.fidelity_key("wdl_mae")] = float(report.wdl_mae)
    return out


def _activate(campaign: Campaign, artifact: Any, tracker: Tracker, label: str) -> str:
    from chesszero.publish import write_activation

    write_activation(campaign.paths.activation, artifact)
    tracker.register_active(Path(artifact.path), label)
    return str(Path(artifact.path).resolve())


def publish_initial(campaign: Campaign, tracker: Tracker) -> tuple[str, int]:
    """Publishes the step-0 network; it must pass fidelity to start a campaign."""
    result = _publish_checkpoint(campaign, None)
    tracker.log_metrics(_fidelity_metrics(result), step=0)
    tracker.log_artifact(result.directory / "fidelity.json", "artifacts/initial")
    if not result.gate.passed:
        reason = result.gate.error or (result.gate.report.failures if result.gate.report else "unknown")
        raise RuntimeError(f"the initial network failed the fidelity gate: {reason}")
    return _activate(campaign, result.int8, tracker, "initial"), -1


def _gate_matches(campaign: Campaign, candidate: str, active: str, generation: int) -> list[float]:
    """Two paired policy-only matches candidate vs active; stops at a failure."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.gate import MatchStatus, PromotionGate
    from chesszero.evaluate.match import play_match
    from chesszero.evaluate.openings import load_openings
    from chesszero.publish import load_artifact
    from chesszero.publish.runtime import OrtRuntime

    ev = campaign.cfg.evaluate
    openings = load_openings(campaign.root / "data" / "openings" / "openings.epd")
    gate = PromotionGate.load(campaign.paths.gate) if campaign.paths.gate.exists() else None
    if gate is None or gate.candidate != candidate:
        gate = PromotionGate(candidate=candidate, active=active, threshold=ev.promotion_score,
                             required_passes=ev.promotion_consecutive)
    runtime = OrtRuntime(threads=1)
    scores = []
    out_dir = campaign.paths.evals(generation)
    out_dir.mkdir(parents=True, exist_ok=True)
    for k in range(ev.promotion_consecutive):
        if gate.promoted:
            break
        half = len(openings) // ev.promotion_consecutive
        chosen = openings[k * half:(k + 1) * half][: ev.openings] or openings[: ev.openings]
        cand = EnginePlayer(runtime.build(load_artifact(candidate)), visits=None, name="candidate")
        act = EnginePlayer(runtime.build(load_artifact(active)), visits=None, name="active")
        try:
            result = play_match(cand, act, chosen, max_plies=ev.ply_cap)
            status = MatchStatus.COMPLETED
        except Exception:  # noqa: BLE001 - an errored match does not count (SPEC 10)
            result, status = None, MatchStatus.ERRORED
        finally:
            cand.close()
            act.close()
        score = result.score if result is not None else None
        gate.record(f"gen{generation}-promo{k}-{uuid.uuid4().hex[:6]}", score=score, status=status)
        gate.save(campaign.paths.gate)
        if result is not None:
            (out_dir / f"promotion_{k}.pgn").write_text(result.pgn())
            scores.append(score)
            if score < ev.promotion_score:
                break
    return scores


def publish_generation(campaign: Campaign, state: CampaignState, tracker: Tracker) -> dict[str, float]:
    """Publishes this generation's checkpoint; activates it when both gates pass."""
    from chesszero.evaluate.gate import PromotionGate

    g = state.generation
    result = _publish_checkpoint(campaign, g)
    metrics = _fidelity_metrics(result)
    tracker.log_artifact(result.directory / "fidelity.json", f"artifacts/gen_{g:04d}")
    tracker.log_artifact(Path(result.int8.path), f"artifacts/gen_{g:04d}")
    if not result.gate.passed:
        metrics["publish/promoted"] = 0.0
        return metrics
    candidate = str(Path(result.int8.path).resolve())
    scores = _gate_matches(campaign, candidate, str(state.active_artifact), g)
    for k, s in enumerate(scores):
        metrics[f"publish/promotion_score_{k}"] = s
    gate = PromotionGate.load(campaign.paths.gate)
    promoted = gate.promoted and gate.candidate == candidate
    metrics["publish/promoted"] = float(promoted)
    if promoted:
        state.active_artifact = _activate(campaign, result.int8, tracker, f"gen{g:04d}")
        state.active_generation = g
    return metrics
