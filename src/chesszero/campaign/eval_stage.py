"""Evaluation phase: ladder matches of the active artifact, policy-only and
searched, rated against the calibrated ladder (SPEC 10).

For each mode the model plays the configured rungs (``evaluate.rungs``), or
with ``evaluate.adaptive_rungs`` = k > 0 the k rungs of that list nearest a
0.5 score at the previous evaluation's joint rating of the same mode
(``chesszero.evaluate.rung_choice.nearest_rungs``; the weakest k at the
first; the budget sweep starts from this generation's policy-only rating for
0 visits and its searched rating otherwise). The headline rating is the
joint maximum-likelihood rating over all the rungs played, with its 95%
bootstrap interval, or a one-sided bound when every game was won or lost
(``campaign.headline``). Beside it goes the paper's
nearest-rung rating: the rung whose score is nearest 0.5, anchored at that
rung's calibrated rating (a bound when that rung was swept), and per rung
the score, the final material and the conversion count (games the model led
by 5+ pawns, and how many of those it won). The ladder's anchor and
calibration date are logged with every rating. ``ratings.json`` in the
generation's eval folder keeps the joint ratings for the next adaptive pick.
The final evaluation also sweeps search budgets (Table 1 of the paper).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign
from chesszero.campaign.search_settings import evaluation_search
from chesszero.campaign.state import CampaignState
from chesszero.campaign.tracking import Tracker

if TYPE_CHECKING:
    from chesszero.evaluate.elo import EloEstimate
    from chesszero.evaluate.joint_rating import JointRating
    from chesszero.evaluate.ladder import LadderTable
    from chesszero.evaluate.match import MatchResult
    from chesszero.material import Conversion


def _ladder(campaign: Campaign) -> LadderTable:
    from chesszero.evaluate.ladder import LadderTable

    path = campaign.root / "data" / "ladder.json"
    if not path.exists():
        raise FileNotFoundError(f"ladder table {path} is missing: run `dvc repro ladder` first")
    return LadderTable.load(path)


RATINGS = "ratings.json"
"""Per generation eval folder: ``{label: JointRating.to_dict()}`` of the rungs played."""


def match_workers(setting: int, matches: int) -> int:
    """Ladder matches played side by side (``evaluate.parallel_matches``):
    the setting, or with 0 one per CPU this process may use; never more than
    the matches, at least one."""
    from chesszero.train.threads import usable_cpus

    if setting < 0:
        raise ValueError(f"evaluate.parallel_matches must be >= 0, got {setting}")
    return max(1, min(setting or usable_cpus(), matches))


def rate_model(campaign: Campaign, artifact: str, visits: int | None, out_dir: Path,
               label: str, rungs: Sequence[str] | None = None, *, material_assist: float = 0.0,
               leaf_material: float = 0.0, leaf_material_depth: int = 8) -> dict[str, Any]:
    """Plays `rungs` (default ``evaluate.rungs``); returns scores, material,
    conversion, the nearest-rung rating with its rung, and the joint rating.
    ``material_assist`` > 0 blends the material count into the search's leaf
    values (:mod:`chesszero.search.assist`, ``selfplay.material_scale``);
    ``leaf_material`` > 0 blends the count after a captures-only quiescence
    search of ``leaf_material_depth`` plies, in the tree
    (``SearchOptions.leaf_material``, the same scale): diagnostics of what
    the value head knows, never a campaign's evaluation."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.joint_rating import joint_rating_of_matches
    from chesszero.evaluate.ladder import choose_rung, rung_player
    from chesszero.evaluate.match import play_match
    from chesszero.evaluate.openings import load_openings
    from chesszero.publish.loading import load_evaluator
    from chesszero.search.assist import with_material_assist

    ev = campaign.cfg.evaluate
    table = _ladder(campaign)
    openings = load_openings(campaign.root / "data" / "openings" / "openings.epd")[: ev.openings]
    session = with_material_assist(load_evaluator(artifact, backend=campaign.cfg.inference.backend, plain_onnx=False),
                                   material_assist, scale=campaign.cfg.selfplay.material_scale)
    names = list(ev.rungs if rungs is None else rungs)
    options = evaluation_search(campaign.cfg)
    options.leaf_material = leaf_material
    options.leaf_material_depth = leaf_material_depth
    options.leaf_material_scale = campaign.cfg.selfplay.material_scale
    options.validate()

    def one(rung_name: str) -> MatchResult:
        model = EnginePlayer(session, visits=visits, name=f"model-{label}", options=options)
        opponent = rung_player(table.rung(rung_name), seed=0, engines=2)
        try:
            return play_match(model, opponent, openings, max_plies=ev.ply_cap, event=f"{label} vs {rung_name}")
        finally:
            model.close()
            opponent.close()

    # Each match is deterministic on its own, so playing them side by side
    # changes their wall time, never their games.
    with ThreadPoolExecutor(max_workers=match_workers(ev.parallel_matches, len(names))) as pool:
        results = dict(zip(names, pool.map(one, names), strict=True))
    for rung_name, result in results.items():
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


def nearest_metrics(key: Callable[..., str], label: str | int, elo: EloEstimate) -> dict[str, float]:
    """The paper's nearest-rung rating as metrics under ``key(label, suffix)``;
    'bound' is signed as for the joint rating (+1: every game won, -1: lost)."""
    bound = 0.0 if not elo.is_bound else (1.0 if elo.score == 1.0 else -1.0)
    return {key(label): elo.estimate, key(label, "lo"): elo.lower, key(label, "hi"): elo.upper,
            key(label, "bound"): bound}


def previous_rating(campaign: Campaign, before: int, label: str) -> tuple[float, str] | None:
    """(estimate, direction) of the latest joint rating of `label` recorded in
    a ``ratings.json`` of a generation before `before`; None without one."""
    for folder in sorted((campaign.paths.dir / "evals").glob("gen_*"), reverse=True):
        suffix = folder.name.removeprefix("gen_")
        if not suffix.isdigit() or int(suffix) >= before or not (folder / RATINGS).is_file():
            continue
        rated = json.loads((folder / RATINGS).read_text()).get(label)
        if rated is not None:
            return float(rated["estimate"]), str(rated["direction"])
    return None


def rungs_for(campaign: Campaign, label: str, before: int) -> list[str]:
    """The rungs `label` plays at generation `before`: ``evaluate.rungs``, or
    with ``evaluate.adaptive_rungs`` = k > 0 the k of them nearest 0.5 at
    the previous rating of `label` (module docstring)."""
    from chesszero.evaluate.rung_choice import nearest_rungs

    ev = campaign.cfg.evaluate
    count = ev.adaptive_rungs
    if count <= 0:
        return list(ev.rungs)
    table = _ladder(campaign)
    pool = {name: table.rating(name) for name in ev.rungs}
    return nearest_rungs(pool, previous_rating(campaign, before, label), count)


def _save_ratings(out_dir: Path, ratings: dict[str, JointRating]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RATINGS
    saved = json.loads(path.read_text()) if path.is_file() else {}
    saved.update({label: r.to_dict() for label, r in ratings.items()})
    path.write_text(json.dumps(saved, indent=1))


def evaluate_generation(campaign: Campaign, state: CampaignState, tracker: Tracker, *,
                        ladder: bool = True, budget_sweep: bool = False) -> dict[str, float]:
    """The ladder matches of both modes (`ladder`) and/or the visit-budget
    sweep (`budget_sweep`) of the active artifact, written under the
    generation's eval folder (summary.txt, appended to; ratings.json) and
    logged. summary.txt leads with the headline (joint) ratings."""
    g = state.generation
    out_dir = campaign.paths.evals(g)
    metrics: dict[str, float] = {}
    modes = {"searched": campaign.cfg.evaluate.visits, "policy": None} if ladder else {}
    headline, lines = [], []
    joints: dict[str, JointRating] = {}
    for mode, visits in modes.items():
        rated = rate_model(campaign, str(state.active_artifact), visits, out_dir, mode,
                           rungs_for(campaign, mode, g))
        joints[mode] = rated["joint"]
        metrics.update(nearest_metrics(M.elo_key, mode, rated["elo"]))
        metrics.update(joint_metrics(M.joint_elo_key, mode, rated["joint"]))
        for rung, score in rated["scores"].items():
            metrics[M.score_key(mode, rung)] = score
            metrics[M.material_key(mode, rung)] = rated["material"][rung]
            metrics.update(conversion_metrics(mode, rung, rated["conversion"][rung]))
        headline.append(f"{mode}: {rated['joint'].describe()}")
        lines.append(f"{mode}: nearest rung {rated['rung']} (the paper's number): "
                     f"{rated['elo'].describe()}; {rated['ladder']}")
        lines.extend(f"{mode} vs {rung}: {c.describe()}" for rung, c in rated["conversion"].items())
    _save_ratings(out_dir, joints)  # before the sweep: its adaptive pick starts from these
    if budget_sweep:
        for visits in campaign.cfg.campaign.eval_visit_budgets:
            label = f"v{visits}"
            like = "policy" if visits == 0 else "searched"  # the adaptive pick starts from this generation's
            rated = rate_model(campaign, str(state.active_artifact), visits or None, out_dir / "budget",
                               label, rungs_for(campaign, like, g + 1))
            joints[label] = rated["joint"]
            metrics.update(nearest_metrics(M.budget_key, visits, rated["elo"]))
            metrics.update(joint_metrics(M.budget_joint_key, visits, rated["joint"]))
            lines.append(f"{label}: {rated['joint'].describe()}; nearest rung {rated['rung']} "
                         f"(the paper's number): {rated['elo'].describe()}")
    _save_ratings(out_dir, joints)
    with open(out_dir / "summary.txt", "w" if ladder else "a") as f:
        f.write("\n".join(headline + lines) + "\n")
    tracker.log_artifact(out_dir, f"evals/gen_{g:04d}")
    tracker.log_params({"ladder.anchor": _ladder(campaign).header()})
    return metrics
