"""Study 3: promotion from incomparable training losses (paper 6.3).

One short campaign with progressive sizing: a fresh, larger candidate starts
after a few generations and is given extra catch-up quanta on the same replay
(``progressive.candidate_quanta`` well above 1). Each generation, from the
campaign's own MLflow run: the active network's training loss, the
candidate's, the candidate's paired searched match against the active
artifact (score, Elo difference with its 95% interval) and the match gate's
pass count and decision.

The old rule (the paper's first controller) promoted when the candidate's
training loss fell below the active network's. The report shows where that
rule would have promoted, what the candidate scored in its match then, and
what the retained match gate (two consecutive scores >= 0.48) decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chesszero.campaign import metrics as M
from chesszero.studies.campaigns import Arm, ArmResult, run_arms
from chesszero.studies.context import StudyContext, StudyRun
from chesszero.studies.report import StudyReport, Table

__all__ = ["loss_rule_generation", "run_promotion_loss"]

NAME = "promotion-loss"
PAPER = ("Paper 6.3: the progressive controller first used smoothed training loss as a cheap proxy for "
         "promotion readiness. Extra catch-up training gave the larger candidate more optimizer quanta on "
         "the same replay, so its lower loss reflected unequal exposure as well as quality; the gate "
         "promoted a candidate about 270 Elo weaker than the active player, although its artifact passed "
         "the fidelity checks. Promotion now needs a score of at least 0.48 in two consecutive paired "
         "matches against the active artifact; a failing score resets the count.")


@dataclass(frozen=True)
class PromotionSettings:
    base_preset: str
    generations: int
    overrides: dict[str, Any]

    @classmethod
    def for_scale(cls, quick: bool) -> PromotionSettings:
        cheap_eval = {"evaluate.rungs": ["random"], "evaluate.cadence_generations": 1000,
                      "campaign.eval_visit_budgets": [0], "campaign.snapshot_every": 1000,
                      "campaign.checkpoint_every": 1000, "campaign.seed": 0,
                      "progressive.start": "fresh", "progressive.plateau_evaluations": None,
                      "progressive.match_every": 1}
        if quick:
            # 16 calibration positions: one disagreement would fail a candidate's fidelity gate
            return cls("smoke", 3, {**cheap_eval, "progressive.stages": ["2x24"], "progressive.candidate_quanta": 4.0,
                                    "progressive.after_generations": 0, "evaluate.openings": 2,
                                    "evaluate.visits": 8, "publish.min_agreement": 0.75, "publish.max_kl": 0.05})
        # 4 candidate quanta to the active's 1 from generation 5; 16-game matches. (Starting at generation 2
        # with 6 quanta, the over-exposed candidate's INT8 artifacts failed the fidelity gate from its second
        # generation on, so it played a single match.)
        return cls("cpu", 12, {**cheap_eval, "progressive.stages": ["6x64"], "progressive.after_generations": 5,
                               "progressive.candidate_quanta": 4.0, "evaluate.openings": 8, "evaluate.visits": 32,
                               "train.steps_per_quantum": 32})


def loss_rule_generation(active: list[float | None], candidate: list[float | None]) -> int | None:
    """The first generation at which the candidate's training loss is below the active one's."""
    for g, (a, c) in enumerate(zip(active, candidate, strict=True)):
        if a is not None and c is not None and c < a:
            return g
    return None


def _rows(r: ArmResult) -> list[list[Any]]:
    elo = f"{M.PROMOTION_ELO}"
    rows = []
    for g in range(r.generations):
        cand = r.at(M.CANDIDATE_LOSS)[g]
        if cand is None and r.at(M.PROMOTION_PROMOTED)[g] is None:
            continue  # no candidate in this generation
        active = r.at(M.TRAIN_LOSS)[g]
        rows.append([g, active, cand, None if cand is None or active is None else int(cand < active),
                     r.at(M.PROMOTION_SCORE)[g], r.at(elo)[g], r.at(f"{elo}_lo")[g], r.at(f"{elo}_hi")[g],
                     r.at(M.CANDIDATE_FIDELITY)[g], r.at(M.PROMOTION_PASSES)[g], r.at(M.PROMOTION_PROMOTED)[g]])
    return rows


def run_promotion_loss(ctx: StudyContext) -> StudyReport:
    from chesszero.studies import plots

    s = PromotionSettings.for_scale(ctx.quick)
    arm = Arm("catch-up", "fresh candidate, extra catch-up quanta", {})
    tracker = StudyRun(ctx, {"study": NAME, "scale": ctx.scale.value, "base_preset": s.base_preset,
                             "generations": s.generations, "overrides": s.overrides})
    (r,) = run_arms(ctx, tracker, base_preset=s.base_preset, arms=[arm], generations=s.generations,
                    common=s.overrides)
    from chesszero.config import load_config

    threshold = load_config(ctx.work / "params.yaml", preset=arm.slug).evaluate.promotion_score
    rows = _rows(r)
    if not rows:
        raise RuntimeError(f"study {NAME}: the campaign {r.campaign} never had a candidate")
    active, cand = r.at(M.TRAIN_LOSS), r.at(M.CANDIDATE_LOSS)
    by_loss = loss_rule_generation(active, cand)
    promoted = [g for g, v in enumerate(r.at(M.PROMOTION_PROMOTED)) if v == 1.0]
    score_then = r.at(M.PROMOTION_SCORE)[by_loss] if by_loss is not None else None
    elo_then = r.at(M.PROMOTION_ELO)[by_loss] if by_loss is not None else None
    scores = [v for v in r.values(M.PROMOTION_SCORE)]
    headline = {"loss_rule_generation": float(by_loss if by_loss is not None else -1),
                "gate_promoted_generation": float(promoted[0] if promoted else -1),
                "matches": float(len(scores)), "mean_match_score": sum(scores) / len(scores) if scores else 0.0,
                "candidate_quanta": float(r.values(M.CANDIDATE_QUANTA)[-1] if r.values(M.CANDIDATE_QUANTA) else 0),
                "catch_up_presentations": float(r.values(M.CANDIDATE_CATCH_UP)[-1]
                                                if r.values(M.CANDIDATE_CATCH_UP) else 0),
                "candidate_fidelity_rejections": float(sum(v == 0.0 for v in r.at(M.CANDIDATE_FIDELITY)))}
    if score_then is not None:
        headline["score_at_loss_rule"] = float(score_then)
    if elo_then is not None:
        headline["elo_diff_at_loss_rule"] = float(elo_then)
    tracker.log_metrics(headline)

    gens = list(range(s.generations))
    figs = ctx.out / NAME
    plots.line_figure(figs / "losses.png", gens, {"active": active, "candidate": cand},
                      title="Training loss by generation", xlabel="generation", ylabel="loss (quantum mean)")
    plots.line_figure(figs / "match_score.png", gens, {"candidate vs active": r.at(M.PROMOTION_SCORE)},
                      title="Candidate's paired match score", xlabel="generation", ylabel="score",
                      references={f"promotion threshold {threshold:g}": threshold})

    if by_loss is None:
        loss_part = ("The candidate's training loss never fell below the active network's in this run, so the "
                     "loss rule would not have promoted it either: the failure did not reproduce at this scale.")
    else:
        match_part = (f"in its match that generation it scored {score_then:.2f} ({elo_then:+.0f} Elo)"
                      if score_then is not None and elo_then is not None else "it played no match that generation")
        loss_part = (f"With {headline['candidate_quanta']:.0f} catch-up quanta the candidate's training loss fell "
                     f"below the active network's at generation {by_loss} ({cand[by_loss]:.3f} vs "
                     f"{active[by_loss]:.3f}), where the loss rule would have promoted it; {match_part}.")
        if score_then is not None and score_then < threshold:
            loss_part += (" The loss rule would have promoted a candidate that was losing to the active network: "
                          "the paper's failure.")
        elif score_then is not None:
            loss_part += (" The candidate was not weaker when the loss rule fired, so at this scale the paper's "
                          "failure did not reproduce: both rules pointed the same way.")
    gate_part = (f"The match gate promoted it at generation {promoted[0]}, after consecutive scores of at "
                 f"least {threshold:g}." if promoted else
                 f"The match gate did not promote it in {len(scores)} matches (mean score "
                 f"{headline['mean_match_score']:.2f}).")
    rejected = sum(v == 0.0 for v in r.at(M.CANDIDATE_FIDELITY))
    fidelity_part = (f" {rejected} of the candidate's INT8 artifacts failed the publication fidelity gate and "
                     "played no match." if rejected else "")
    finding = (f"{loss_part} {gate_part}{fidelity_part}"
               + (" This is the quick scale: tiny networks and 4-game matches, a smoke test of the study rather "
                  "than evidence." if ctx.quick else ""))
    tables = [
        Table("By generation while a candidate exists",
              ["generation", "active loss", "candidate loss", "loss rule promotes", "match score",
               "Elo diff", "Elo lo", "Elo hi", "candidate artifact passed fidelity", "gate passes",
               "gate promoted"], rows,
              note="Loss rule: candidate training loss below the active one's (1). Elo difference of the "
                   "candidate over the active artifact with its 95% bootstrap interval over opening pairs. A "
                   "candidate artifact that fails the publication fidelity gate plays no match that generation."),
        Table("Summary", ["measure", "value"], [[k, v] for k, v in headline.items()]),
    ]
    return StudyReport(NAME, "Study 3: promotion from incomparable training losses (paper 6.3)", PAPER, finding,
                       ctx.scale.value, tables=tables,
                       figures=[f"{NAME}/losses.png", f"{NAME}/match_score.png"], headline=headline,
                       mlflow=tracker.finish(), command=ctx.command())
