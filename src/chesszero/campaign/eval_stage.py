"""Evaluation phase: ladder matches of the active artifact, policy-only and
searched, rated against the calibrated ladder (SPEC 10).

For each mode the model plays the configured rungs (``evaluate.rungs``);
the rating uses the rung whose score is nearest 0.5, anchored at that
rung's calibrated rating, with a 95% bootstrap interval over opening pairs.
Beside it goes the joint maximum-likelihood rating over all the rungs
played (``evaluate.joint_rating``; a bound when every game was won or
lost), and per rung the score, the final material and the conversion count
(games the model led by 5+ pawns, and how many of those it won). The
ladder's anchor and calibration date are logged with every rating. The
final evaluation also sweeps search budgets (Table 1 of the paper).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign
from chesszero.campaign.search_settings import evaluation_search
from chesszero.campaign.state import CampaignState
from chesszero.campaign.tracking import Tracker

if TYPE_CHECKING:
    from chesszero.evaluate.joint_rating import JointRating
    from chesszero.evaluate.ladder import LadderTable
    from chesszero.material import Conversion


def _ladder(campaign: Campaign) -> LadderTable:
    from chesszero.evaluate.ladder import LadderTable

    path = campaign.root / "data" / "ladder.json"
    if not path.exists():
        raise FileNotFoundError(f"ladder table {path} is missing: run `dvc repro ladder` first")
    return LadderTable.load(path)


def rate_model(campaign: Campaign, artifact: str, visits: int | None, out_dir: Path,
               label: str) -> dict[str, Any]:
    """Plays the configured rungs; returns scores, material, conversion, the
    nearest-rung rating with its rung, and the joint rating."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.joint_rating import joint_rating_of_matches
    from chesszero.evaluate.ladder import choose_rung, rung_player
    from chesszero.evaluate.match import play_match
    from chesszero.evaluate.openings import load_openings
    from chesszero.publish.loading import load_evaluator

    ev = campaign.cfg.evaluate
    table = _ladder(campaign)
    openings = load_openings(campaign.root / "data" / "openings" / "openings.epd")[: ev.openings]
    session = load_evaluator(artifact, backend=campaign.cfg.inference.backend, plain_onnx=False)
    results = {}
    for rung_name in ev.rungs:
        rung = table.rung(rung_name)
        model = EnginePlayer(session, visits=visits, name=f"model-{label}",
                             options=evaluation_search(campaign.cfg))
        opponent = rung_player(rung, seed=0, engines=2)
        try:
            result = play_match(model, opponent, openings, max_plies=ev.ply_cap, event=f"{label} vs {rung_name}")
        finally:
            model.close()
            opponent.close()
        results[rung_name] = result
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{label}_vs_{rung_name}.pgn").write_text(result.pgn())
        (out_dir / f"{label}_vs_{rung_name}.json").write_text(json.dumps(result.to_dict(), indent=1))
    scores = {name: r.score for name, r in results.items()}
    material = {name: r.final_material() for name, r in results.items()}
    conversion = {name: r.conversion() for name, r in results.items()}
    nearest = choose_rung(scores)
    elo = results[nearest].elo(table.rating(nearest), resamples=ev.bootstrap_resamples)
    joint = joint_rating_of_matches(results, {name: table.rating(name) for name in results},
                                    resamples=ev.bootstrap_resamples)
    return {"scores": scores, "material": material, "conversion": conversion, "rung": nearest, "elo": elo,
            "joint": joint, "ladder": table.header()}


def joint_metrics(key: Callable[..., str], label: str | int, joint: JointRating) -> dict[str, float]:
    """A joint rating as metrics under ``key(label, suffix)``; an infinite end
    (the open side of a bound) is left out."""
    out = {key(label): joint.estimate, key(label, "bound"): {">": 1.0, "<": -1.0}.get(joint.direction, 0.0)}
    if math.isfinite(joint.lower):
        out[key(label, "lo")] = joint.lower
    if math.isfinite(joint.upper):
        out[key(label, "hi")] = joint.upper
    return out


def conversion_metrics(mode: str, rung: str, conversion: Conversion) -> dict[str, float]:
    """Counts always; the rate only when there was an opportunity."""
    out = {M.conversion_key(mode, rung, "opportunities"): float(conversion.opportunities),
           M.conversion_key(mode, rung, "converted"): float(conversion.converted)}
    if conversion.rate is not None:
        out[M.conversion_key(mode, rung)] = conversion.rate
    return out


def evaluate_generation(campaign: Campaign, state: CampaignState, tracker: Tracker, *,
                        ladder: bool = True, budget_sweep: bool = False) -> dict[str, float]:
    """The ladder matches of both modes (`ladder`) and/or the visit-budget
    sweep (`budget_sweep`) of the active artifact, written under the
    generation's eval folder (summary.txt, appended to) and logged."""
    g = state.generation
    out_dir = campaign.paths.evals(g)
    metrics: dict[str, float] = {}
    modes = {"policy": None, "searched": campaign.cfg.evaluate.visits} if ladder else {}
    lines = []
    for mode, visits in modes.items():
        rated = rate_model(campaign, str(state.active_artifact), visits, out_dir, mode)
        elo = rated["elo"]
        metrics[M.elo_key(mode)] = elo.estimate
        metrics[M.elo_key(mode, "lo")] = elo.lower
        metrics[M.elo_key(mode, "hi")] = elo.upper
        metrics[M.elo_key(mode, "bound")] = float(elo.is_bound)  # score 0 or 1: a one-sided bound
        metrics.update(joint_metrics(M.joint_elo_key, mode, rated["joint"]))
        for rung, score in rated["scores"].items():
            metrics[M.score_key(mode, rung)] = score
            metrics[M.material_key(mode, rung)] = rated["material"][rung]
            metrics.update(conversion_metrics(mode, rung, rated["conversion"][rung]))
        lines.append(f"{mode}: {elo.describe() if hasattr(elo, 'describe') else elo.estimate} "
                     f"(nearest rung {rated['rung']}; {rated['ladder']})")
        lines.append(f"{mode}: {rated['joint'].describe()}")
        lines.extend(f"{mode} vs {rung}: {c.describe()}" for rung, c in rated["conversion"].items())
    if budget_sweep:
        for visits in campaign.cfg.campaign.eval_visit_budgets:
            rated = rate_model(campaign, str(state.active_artifact), visits or None, out_dir / "budget",
                               f"v{visits}")
            metrics[M.budget_key(visits)] = rated["elo"].estimate
            metrics[M.budget_key(visits, "lo")] = rated["elo"].lower
            metrics[M.budget_key(visits, "hi")] = rated["elo"].upper
            metrics[M.budget_key(visits, "bound")] = float(rated["elo"].is_bound)
            metrics.update(joint_metrics(M.budget_joint_key, visits, rated["joint"]))
            lines.append(f"v{visits}: {rated['elo'].describe()} (nearest rung {rated['rung']}); "
                         f"{rated['joint'].describe()}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "summary.txt", "w" if ladder else "a") as f:
        f.write("\n".join(lines) + "\n")
    tracker.log_artifact(out_dir, f"evals/gen_{g:04d}")
    tracker.log_params({"ladder.anchor": _ladder(campaign).header()})
    return metrics
