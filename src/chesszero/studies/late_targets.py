"""Study 1: late-game target poisoning (paper 6.1).

1. A short campaign of the retained recipe from random weights (the ``cpu``
   preset; the quick scale uses ``smoke``) records, per generation, the
   diagnostics every campaign now logs (``selfplay.cap_diagnostics``):
   capped share, share of admitted rows on a cut target, share of plies
   without a training row, beside self-play conversion.
2. With the campaign's final active artifact and its self-play setup (search
   options, material assist at that generation), one actor plays games at
   the recipe's ply cap. Every game cut at the cap gives a cut position;
   each estimator values it:

   - the dedicated full search at the cut (fresh tree, the visit cap) -- retained;
   - the actor's own cap search (``cap_value`` of the record, same budget);
   - the preceding move's cheap search (the position before the cut, a
     fraction of the visit cap, sign reversed) -- the paper's affected run;
   - the preceding move's recorded full search (sign reversed);
   - the raw network value at the cut;
   - the material baseline, material / 39.

   The outcome is then found by playing each cut game on with the same
   evaluator and search (unfinished after the extension: a draw, counted).
   Brier error and cross-entropy of ``wdl(v)`` against it
   (``studies.cut_targets``), beside the paper's 0.444/0.756 (cut search)
   and 0.491/0.851 (material).

Not done here: the old policy itself (late tail excluded from training,
cheap late search) as a campaign arm; the recipe has no such setting, so
the conversion and capped-share comparison of the two policies is absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chesszero.campaign import metrics as M
from chesszero.studies.campaigns import Arm, run_arms
from chesszero.studies.context import StudyContext, StudyRun
from chesszero.studies.report import StudyReport, Table

__all__ = ["run_late_targets"]

NAME = "late-game-targets"
PAPER_SEARCH = (0.444, 0.756)
PAPER_MATERIAL = (0.491, 0.851)
PAPER = ("Paper 6.1: an earlier design excluded the late-game tail from training and searched it cheaply; "
         "capped games took their outcome target from the preceding move's cheap search. In the affected "
         "interval about one ply in seven was ineligible for training, 27-32% of games reached the cap and "
         "36-38% of admitted rows inherited a cut target, and conversion failed. On 2,282 early-cut positions "
         f"whose outcome came from play beyond the cap, the cut-position search scored Brier {PAPER_SEARCH[0]} / "
         f"cross-entropy {PAPER_SEARCH[1]} against {PAPER_MATERIAL[0]} / {PAPER_MATERIAL[1]} for material / 39. "
         "The retained worker runs a dedicated full search at the cut.")


@dataclass(frozen=True)
class LateSettings:
    base_preset: str
    generations: int
    games: int  # self-play games played for cut positions
    cheap_divisor: int  # cheap search = visit cap // this
    extra_plies: int  # continuation beyond the cut
    common: dict[str, Any]

    @classmethod
    def for_scale(cls, quick: bool) -> LateSettings:
        cheap_eval = {"evaluate.rungs": ["random"], "evaluate.openings": 1, "evaluate.cadence_generations": 1000,
                      "campaign.eval_visit_budgets": [0], "campaign.snapshot_every": 1000,
                      "campaign.checkpoint_every": 1000}
        if quick:
            return cls("smoke", 1, 8, 4, 40, {**cheap_eval, "selfplay.ply_cap": [[0, 24]]})
        return cls("cpu", 6, 24, 8, 150, {**cheap_eval, "train.steps_per_quantum": 32,
                                           "selfplay.games_in_flight": 12, "selfplay.batch_size": 6})


def _cut_games(record: Any) -> tuple[Any, Any]:
    """(game at the cut, game one ply before it)."""
    from chesszero import core

    before = core.Game(record.start_fen)
    for uci in [*record.prefix_moves, *record.moves[:-1]]:
        before.push_uci(uci)
    at = before.copy()
    at.push_uci(record.moves[-1])
    return at, before


def _previous_recorded(record: Any) -> float:
    """The recorded root value of the search before the last move, from the cut's side (sign reversed)."""
    last = len(record.moves) - 1
    for p in record.plies:
        if p.ply == last and not p.is_cap_search:
            return -float(p.root_value)
    raise ValueError(f"game {record.game_id}: no recorded search before its last move")


def run_late_targets(ctx: StudyContext) -> StudyReport:
    from chesszero.campaign.selfplay_stage import actor_settings
    from chesszero.publish.loading import load_evaluator
    from chesszero.search import SearchOptions
    from chesszero.search.assist import with_material_assist
    from chesszero.selfplay.actor import SelfPlayActor
    from chesszero.studies import plots
    from chesszero.studies.continuation import play_on, search_values
    from chesszero.studies.cut_targets import material_value, outcome_onehot, score_estimator

    s = LateSettings.for_scale(ctx.quick)
    tracker = StudyRun(ctx, {"study": NAME, "scale": ctx.scale.value, "base_preset": s.base_preset,
                             "generations": s.generations, "games": s.games, "cheap_divisor": s.cheap_divisor,
                             "extra_plies": s.extra_plies, "common": s.common})
    (result,) = run_arms(ctx, tracker, base_preset=s.base_preset,
                         arms=[Arm("retained", "retained recipe", {})], generations=s.generations, common=s.common)

    # ---- cut positions from the final artifact's self-play
    from chesszero.campaign.context import Campaign

    campaign = Campaign.open(ctx.work, result.campaign, preset="retained")
    cfg, state = campaign.cfg, campaign.load_state()
    generation = state.generation
    visits = cfg.search.visit_cap.at(generation)
    ply_cap = cfg.selfplay.ply_cap.at(generation)
    session = with_material_assist(load_evaluator(str(state.active_artifact), threads=1, plain_onnx=False),
                                   cfg.selfplay.material_assist.at(generation), scale=cfg.selfplay.material_scale)
    settings = actor_settings(cfg, actor=0, seed=ctx.seed + 101, archive_path=ctx.work / "cut-archive.sqlite")
    actor = SelfPlayActor(settings)
    try:
        report = actor.play(session, visits=visits, ply_cap=ply_cap, model_id="study", generation=generation,
                            games=s.games)
    finally:
        actor.close()
    capped = [r for r in report.records if r.termination == "ply_cap" and len(r.moves) >= 2]
    if not capped:
        raise RuntimeError(f"{NAME}: none of {report.games} self-play games reached the ply cap {ply_cap}")
    options = SearchOptions(**{**settings.search, "dirichlet_epsilon": 0.0})
    at_cut, before_cut = zip(*(_cut_games(r) for r in capped), strict=True)
    cheap = max(1, visits // s.cheap_divisor)
    estimates: dict[str, list[float]] = {
        f"dedicated full search at the cut ({visits} visits; retained)":
            search_values(at_cut, session, visits=visits, options=options, seed=ctx.seed),
        "the actor's cap search (cap_value)": [float(r.cap_value) for r in capped],
        f"preceding move's cheap search ({cheap} visits; paper's affected run)":
            [-v for v in search_values(before_cut, session, visits=cheap, options=options, seed=ctx.seed)],
        "preceding move's recorded full search": [_previous_recorded(r) for r in capped],
        "raw network value at the cut": [float(r.plies[-1].raw_value) for r in capped],
        "material / 39 (paper's baseline)": [material_value(g.fen()) for g in at_cut],
    }
    continued = play_on(at_cut, session, visits=visits, options=options, extra_plies=s.extra_plies, seed=ctx.seed)
    outcomes = np.stack([outcome_onehot(c.result, bool(g.turn)) for c, g in zip(continued, at_cut, strict=True)])
    scores = [score_estimator(name, np.array(v), outcomes) for name, v in estimates.items()]
    adjudicated = sum(c.adjudicated for c in continued)
    decisive = int((outcomes[:, 1] == 0).sum())

    # ---- report
    gens = list(range(s.generations))
    diag_rows = [[g, result.at(M.SELFPLAY_GAMES)[g], result.at(M.SELFPLAY_CAPPED_SHARE)[g],
                  result.at(M.SELFPLAY_CUT_TARGET_SHARE)[g], result.at(M.SELFPLAY_INELIGIBLE_SHARE)[g],
                  result.at(M.SELFPLAY_CONVERSION)[g], result.at(M.NON_DECISIVE)[g]] for g in gens]
    by_name = {sc.name: sc for sc in scores}
    search_score, material_score = scores[0], by_name["material / 39 (paper's baseline)"]
    cheap_score = scores[2]
    headline = {"positions": len(capped), "decisive_outcomes": decisive, "adjudicated": adjudicated,
                "search_brier": search_score.brier, "search_ce": search_score.cross_entropy,
                "cheap_brier": cheap_score.brier, "cheap_ce": cheap_score.cross_entropy,
                "material_brier": material_score.brier, "material_ce": material_score.cross_entropy,
                "capped_share_last": result.values(M.SELFPLAY_CAPPED_SHARE)[-1],
                "cut_target_share_last": result.values(M.SELFPLAY_CUT_TARGET_SHARE)[-1],
                "ineligible_share_last": result.values(M.SELFPLAY_INELIGIBLE_SHARE)[-1]}
    tracker.log_metrics(headline)
    for g, row in enumerate(diag_rows):
        tracker.log_metrics({"capped_share": row[2], "cut_target_share": row[3], "ineligible_share": row[4]},
                            step=g)
    figs = ctx.out / NAME
    plots.bar_figure(figs / "estimators.png", ["Brier", "cross-entropy"],
                     {sc.name.split(" (")[0]: [sc.brier, sc.cross_entropy] for sc in scores},
                     title=f"Cut-target estimators on {len(capped)} cut positions (lower is better)",
                     ylabel="score", references={"paper: search 0.444 / 0.756": PAPER_SEARCH[0]})
    plots.line_figure(figs / "diagnostics.png", gens,
                      {"capped share": result.at(M.SELFPLAY_CAPPED_SHARE),
                       "rows on a cut target": result.at(M.SELFPLAY_CUT_TARGET_SHARE),
                       "plies without a training row": result.at(M.SELFPLAY_INELIGIBLE_SHARE)},
                      title="Late-game target diagnostics by generation (retained recipe)",
                      xlabel="generation", ylabel="share")
    order = "below" if search_score.brier < material_score.brier else "not below"
    finding = (
        f"On {len(capped)} positions cut at the {ply_cap}-ply cap by the final artifact of a {s.generations}-"
        f"generation `{s.base_preset}` campaign, continued for up to {s.extra_plies} plies ({decisive} decisive, "
        f"{adjudicated} still unfinished and scored draws), the dedicated full search at the cut scored Brier "
        f"{search_score.brier:.3f} / cross-entropy {search_score.cross_entropy:.3f}, the preceding move's cheap "
        f"search {cheap_score.brier:.3f} / {cheap_score.cross_entropy:.3f} and material / 39 "
        f"{material_score.brier:.3f} / {material_score.cross_entropy:.3f} (paper: {PAPER_SEARCH[0]} / "
        f"{PAPER_SEARCH[1]} search, {PAPER_MATERIAL[0]} / {PAPER_MATERIAL[1]} material): the searched Brier is "
        f"{order} the material baseline's here. In the campaign's last generation "
        f"{headline['capped_share_last']:.0%} of games reached the cap, {headline['cut_target_share_last']:.0%} of "
        f"admitted rows inherited a cut target and {headline['ineligible_share_last']:.0%} of plies had no training "
        "row (paper's affected interval: 27-32%, 36-38%, about 14%). The old policy as a campaign arm (tail "
        "excluded, cheap late search) is not reproduced: the recipe has no such setting."
        + (" Quick scale: a smoke test of the study, not evidence." if ctx.quick else ""))
    tables = [
        Table("Cut-target estimators against continued play",
              ["estimator", "positions", "Brier", "cross-entropy", "sign accuracy (decisive)"],
              [sc.row for sc in scores],
              note=f"Outcomes: {decisive} decisive, {len(capped) - decisive - adjudicated} drawn by the rules, "
                   f"{adjudicated} unfinished after {s.extra_plies} more plies (scored draws)."),
        Table("Beside the paper", ["quantity", "measured", "paper"],
              [["Brier, cut-position search", search_score.brier, PAPER_SEARCH[0]],
               ["cross-entropy, cut-position search", search_score.cross_entropy, PAPER_SEARCH[1]],
               ["Brier, material / 39", material_score.brier, PAPER_MATERIAL[0]],
               ["cross-entropy, material / 39", material_score.cross_entropy, PAPER_MATERIAL[1]],
               ["capped share (last generation)", headline["capped_share_last"], "0.27-0.32 (affected)"],
               ["rows on a cut target (last generation)", headline["cut_target_share_last"], "0.36-0.38 (affected)"],
               ["plies without a training row (last generation)", headline["ineligible_share_last"],
                "~0.14 (affected)"]]),
        Table("Diagnostics by generation (retained recipe)",
              ["generation", "games", "capped share", "rows on a cut target", "plies without a training row",
               "conversion", "non-decisive rate"], diag_rows,
              note="Logged by every campaign (selfplay/capped_share, selfplay/cut_target_share, "
                   "selfplay/ineligible_share)."),
    ]
    return StudyReport(NAME, "Study 1: late-game target poisoning (paper 6.1)", PAPER, finding, ctx.scale.value,
                       tables=tables, figures=[f"{NAME}/estimators.png", f"{NAME}/diagnostics.png"],
                       headline=headline, mlflow=tracker.finish(), command=ctx.command())
