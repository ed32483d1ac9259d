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
from chesszero.campaign.search_settings import evaluation_search
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


def _publish_checkpoint(campaign: Campaign, generation: int | None) -> Any:
    from chesszero.publish import PublishSettings, load_calibration_set, publish

    cfg = campaign.cfg
    calib = load_calibration_set(campaign.root / "data" / "calibration" / "positions.jsonl",
                                 limit=cfg.publish.calibration_positions)
    return publish(campaign.paths.checkpoint, campaign.paths.artifact_dir(generation), calib,
                   settings=PublishSettings.from_config(cfg.publish), state_path=None,
                   tune=_tuning_set(campaign, generation))


def _fidelity_metrics(result: Any) -> dict[str, float]:
    report = result.gate.report
    out = {M.fidelity_key("passed"): float(result.gate.passed)}
    if report is not None:
        out[M.fidelity_key("agreement")] = float(report.agreement)
        out[M.fidelity_key("kl")] = float(report.kl_mean)
        out[M.fidelity_key("wdl_mae")] = float(report.wdl_mae)
    return out


def _activate(campaign: Campaign, artifact: Any, tracker: Tracker, label: str) -> str:
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
    result = _publish_checkpoint(campaign, None)
    tracker.log_metrics({k.replace("publish/", "publish/initial_"): v for k, v in _fidelity_metrics(result).items()},
                        step=0)
    tracker.log_artifact(result.directory / "fidelity.json", "artifacts/initial")
    if not result.gate.passed:
        reason = result.gate.error or (result.gate.report.failures if result.gate.report else "unknown")
        raise RuntimeError(f"the initial network failed the fidelity gate: {reason}")
    return _activate(campaign, result.int8, tracker, "initial"), -1


def _gate_matches(campaign: Campaign, candidate: str, active: str, generation: int) -> bool:
    """Paired policy-only matches candidate vs active until the gate decides:
    promoted after `promotion_consecutive` passes; a failing score ends the
    attempt for this generation; errored matches do not count and are retried
    (at most twice). Resumes the sequence recorded in the gate file."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.gate import MatchStatus, PromotionGate
    from chesszero.evaluate.match import play_match
    from chesszero.evaluate.openings import load_openings
    from chesszero.publish.loading import load_evaluator

    ev = campaign.cfg.evaluate
    openings = load_openings(campaign.root / "data" / "openings" / "openings.epd")
    gate = PromotionGate.load(campaign.paths.gate) if campaign.paths.gate.exists() else None
    if gate is None or gate.candidate != candidate:
        gate = PromotionGate(candidate=candidate, active=active, threshold=ev.promotion_score,
                             required_passes=ev.promotion_consecutive)
    out_dir = campaign.paths.evals(generation)
    out_dir.mkdir(parents=True, exist_ok=True)
    errored = 0
    while not gate.promoted and errored <= 2:
        completed = [e for e in gate.history if e.status is MatchStatus.COMPLETED]
        if completed and completed[-1].passed is False:
            break
        k = len(gate.history)
        chosen = [openings[(k * ev.openings + i) % len(openings)] for i in range(ev.openings)]
        cand = EnginePlayer(load_evaluator(candidate, plain_onnx=False), visits=None, name="candidate",
                            options=evaluation_search(campaign.cfg))
        act = EnginePlayer(load_evaluator(active, plain_onnx=False), visits=None, name="active",
                           options=evaluation_search(campaign.cfg))
        try:
            result = play_match(cand, act, chosen, max_plies=ev.ply_cap, event=f"promotion {k}")
            status = MatchStatus.COMPLETED
        except Exception:  # noqa: BLE001 - an errored match does not count (SPEC 10)
            result, status = None, MatchStatus.ERRORED
            errored += 1
        finally:
            cand.close()
            act.close()
        if result is not None:
            (out_dir / f"promotion_{k}.pgn").write_text(result.pgn())
        gate.record(f"gen{generation:04d}-promo{k}", score=result.score if result else None, status=status)
        gate.save(campaign.paths.gate)
    return gate.promoted


def _published(campaign: Campaign, generation: int) -> dict[str, Any] | None:
    """The marker of a finished publication of the current checkpoint, if any."""
    from chesszero.fsio import file_sha256

    marker = campaign.paths.artifact_dir(generation) / "publish.json"
    if not marker.exists():
        return None
    data = json.loads(marker.read_text())
    return data if data["checkpoint_sha256"] == file_sha256(campaign.paths.checkpoint) else None


def publish_generation(campaign: Campaign, state: CampaignState, tracker: Tracker) -> dict[str, float]:
    """Publishes this generation's checkpoint and activates it when it passes."""
    from chesszero.fsio import file_sha256

    g = state.generation
    marker = _published(campaign, g)
    if marker is None:
        result = _publish_checkpoint(campaign, g)
        marker = {"checkpoint_sha256": file_sha256(campaign.paths.checkpoint), "passed": result.gate.passed,
                  "artifact": str(Path(result.int8.path).resolve()), "metrics": _fidelity_metrics(result)}
        tracker.log_artifact(result.directory / "fidelity.json", f"artifacts/gen_{g:04d}")
        tracker.log_artifact(Path(result.int8.path), f"artifacts/gen_{g:04d}")
        write_json_atomic(campaign.paths.artifact_dir(g) / "publish.json", marker)
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

        state.active_artifact = _activate(campaign, load_artifact(candidate), tracker, f"gen{g:04d}")
        state.active_generation = g
        campaign.save_state(state)
    return metrics
