"""Study 1: late-game target poisoning (paper 6.1).

1. Two short campaigns from random weights (the ``cpu`` preset; the quick
   scale uses ``smoke``), the retained recipe and the old policy
   (``studies.late_policy``: the recipe's ``selfplay.late_tail`` with the late
   tail cheap and untrained and the cut target from the preceding search),
   record per generation the diagnostics every campaign now logs
   (``selfplay.cap_diagnostics``): capped share, share of admitted rows on a
   cut target, share of plies without a training row, beside self-play
   conversion and the non-decisive rate. The report compares the two
   policies (last generation and mean over the run).
2. With the retained campaign's final active artifact and its self-play setup (search
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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chesszero.campaign import metrics as M
from chesszero.studies.campaigns import run_arms
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
    from chesszero.config.loader import load_config
    from chesszero.publish.loading import load_evaluator
    from chesszero.search import SearchOptions
    from chesszero.search.assist import with_material_assist
    from chesszero.selfplay.actor import SelfPlayActor
    from chesszero.studies import late_policy, plots
    from chesszero.studies.continuation import play_on, search_values
    from chesszero.studies.cut_targets import material_value, outcome_onehot, score_estimator

    s = LateSettings.for_scale(ctx.quick)
    base_cfg = load_config(ctx.project / "params.yaml", preset=s.base_preset, overrides=s.common)
    arms = late_policy.arms(base_cfg, s.cheap_divisor)
    tracker = StudyRun(ctx, {"study": NAME, "scale": ctx.scale.value, "base_preset": s.base_preset,
                             "generations": s.generations, "games": s.games, "cheap_divisor": s.cheap_divisor,
                             "extra_plies": s.extra_plies, "common": s.common,
                             "arms": {a.slug: dict(a.overrides) for a in arms}})
    results = run_arms(ctx, tracker, base_preset=s.base_preset, arms=arms, generations=s.generations,
                       common=s.common)
    result, old = results

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
        with ctx.phase(f"{s.games} games for cut positions"):
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
    with ctx.phase(f"continued play (up to {s.extra_plies} plies)"):
        continued = play_on(at_cut, session, visits=visits, options=options, extra_plies=s.extra_plies,
                            seed=ctx.seed)
    outcomes = np.stack([outcome_onehot(c.result, bool(g.turn)) for c, g in zip(continued, at_cut, strict=True)])
    scores = [score_estimator(name, np.array(v), outcomes) for name, v in estimates.items()]
    adjudicated = sum(c.adjudicated for c in continued)
    decisive = int((outcomes[:, 1] == 0).sum())

    # ---- report
    gens = list(range(s.generations))
    diag_rows = [[r.arm.slug, g, r.at(M.SELFPLAY_GAMES)[g], r.at(M.SELFPLAY_CAPPED_SHARE)[g],
                  r.at(M.SELFPLAY_CUT_TARGET_SHARE)[g], r.at(M.SELFPLAY_INELIGIBLE_SHARE)[g],
                  r.at(M.SELFPLAY_CONVERSION)[g], r.at(M.NON_DECISIVE)[g]] for r in results for g in gens]
    by_name = {sc.name: sc for sc in scores}
    search_score, material_score = scores[0], by_name["material / 39 (paper's baseline)"]
    cheap_score = scores[2]
    headline = {"positions": len(capped), "decisive_outcomes": decisive, "adjudicated": adjudicated,
                "search_brier": search_score.brier, "search_ce": search_score.cross_entropy,
                "cheap_brier": cheap_score.brier, "cheap_ce": cheap_score.cross_entropy,
                "material_brier": material_score.brier, "material_ce": material_score.cross_entropy,
                "capped_share_last": result.values(M.SELFPLAY_CAPPED_SHARE)[-1],
                "cut_target_share_last": result.values(M.SELFPLAY_CUT_TARGET_SHARE)[-1],
                "ineligible_share_last": result.values(M.SELFPLAY_INELIGIBLE_SHARE)[-1],
                **late_policy.headline(results)}
    tracker.log_metrics(headline)
    for row in diag_rows:
        tracker.log_metrics({f"{row[0]}/{k}": v for k, v in zip(
            ("capped_share", "cut_target_share", "ineligible_share"), row[3:6], strict=True) if v is not None},
            step=row[1])
    figs = ctx.out / NAME
    plots.bar_figure(figs / "estimators.png", ["Brier", "cross-entropy"],
                     {sc.name.split(" (")[0]: [sc.brier, sc.cross_entropy] for sc in scores},
                     title=f"Cut-target estimators on {len(capped)} cut positions (lower is better)",
                     ylabel="score", references={"paper: search 0.444 / 0.756": PAPER_SEARCH[0]})
    shown = late_policy.QUANTITIES[:4]  # conversion and the three diagnostics
    plots.line_figure(figs / "diagnostics.png", gens,
                      {f"{r.arm.slug}: {label}": r.at(key) for r in results for key, label, _ in shown},
                      title="Late-game diagnostics by generation: retained (solid) and old policy (dashed)",
                      xlabel="generation", ylabel="share",
                      styles={f"{r.arm.slug}: {label}": {"color": f"C{i}", "linestyle": "--" if r is old else "-",
                                                         "marker": "s" if r is old else "o"}
                              for r in results for i, (_, label, _) in enumerate(shown)})
    order = "below" if search_score.brier < material_score.brier else "not below"
    finding = (
        f"On {len(capped)} positions cut at the {ply_cap}-ply cap by the final artifact of the retained {s.generations}-"
        f"generation `{s.base_preset}` campaign, continued for up to {s.extra_plies} plies ({decisive} decisive, "
        f"{adjudicated} still unfinished and scored draws), the dedicated full search at the cut scored Brier "
        f"{search_score.brier:.3f} / cross-entropy {search_score.cross_entropy:.3f}, the preceding move's cheap "
        f"search {cheap_score.brier:.3f} / {cheap_score.cross_entropy:.3f} and material / 39 "
        f"{material_score.brier:.3f} / {material_score.cross_entropy:.3f} (paper: {PAPER_SEARCH[0]} / "
        f"{PAPER_SEARCH[1]} search, {PAPER_MATERIAL[0]} / {PAPER_MATERIAL[1]} material): the searched Brier is "
        f"{order} the material baseline's here. In the retained campaign's last generation "
        f"{headline['capped_share_last']:.0%} of games reached the cap, {headline['cut_target_share_last']:.0%} of "
        f"admitted rows inherited a cut target and {headline['ineligible_share_last']:.0%} of plies had no training "
        "row (paper's affected interval: 27-32%, 36-38%, about 14%). "
        + late_policy.finding(results, s.generations, s.base_preset)
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
        Table("Old policy against the retained recipe", late_policy.comparison_header(results),
              late_policy.comparison_rows(results),
              note=f"Old policy: {old.arm.overrides['selfplay.late_tail.from_ply']} as [generation, first tail "
                   f"ply] (about 2/3 of the ply cap), tail searches at visit cap // {s.cheap_divisor}, untrained, "
                   "and the preceding search's root value (sign reversed) as a capped game's outcome target. "
                   "Mean: over the generations that logged the quantity (— where none did)."),
        Table("Diagnostics by generation",
              ["arm", "generation", "games", "capped share", "rows on a cut target", "plies without a training row",
               "conversion", "non-decisive rate"], diag_rows,
              note="Logged by every campaign (selfplay/capped_share, selfplay/cut_target_share, "
                   "selfplay/ineligible_share)."),
    ]
    return StudyReport(NAME, "Study 1: late-game target poisoning (paper 6.1)", PAPER, finding, ctx.scale.value,
                       tables=tables, figures=[f"{NAME}/estimators.png", f"{NAME}/diagnostics.png"],
                       headline=headline, mlflow=tracker.finish(), command=ctx.command())
