"""``learning.md`` of a learning benchmark run, from its curve and summary.

Sections: the run (machine, commit, budget, recipe diff from the ``cpu``
preset); the final evaluation: the headline ratings (final and control arm,
joint rating or its bound per mode, and final minus control with its
bootstrap interval), every match of the two climbs; policy-only play
(stalemates and the share of 5+ pawn leads won, per rung and in all);
issue 22's targets (``learning_targets``); progressive sizing when the recipe
has stages; and the learning curve per generation with the campaign's joint
ratings (a bound printed ``> x``, never as a point).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from learning_curve import (
    GENERATION,
    SELFPLAY_CONVERSION,
    WALL_MIN,
    Curve,
    conversion_columns,
    termination_shares,
)
from learning_host import host_speeds
from learning_summary import (
    CONTROL,
    CURVE,
    FINAL,
    SUMMARY,
    arm_matches,
    arms,
    gain_of,
    joint_of,
    policy_report,
    size_events,
)
from learning_targets import targets_table

from chesszero.campaign import metrics as M
from chesszero.campaign.headline import rating_from


def _f(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def rung_order(curve: Curve | None, summary: dict[str, Any]) -> list[str]:
    """Every rung of the run: the final evaluation's climb (weakest first), then
    the rest the campaign played (none without a `curve`)."""
    final = summary.get("final_evaluation", {})
    named = [*final.get("opponents", []), *(m["opponent"] for m in final.get("matches", []))]
    played = [] if curve is None else [*curve.rungs("searched"), *curve.rungs("policy")]
    others = sorted(set(played) - set(named))
    return list(dict.fromkeys([*named, *others]))


def final_table(summary: dict[str, Any]) -> list[str]:
    """Every match of the final evaluation, per arm in climbing order."""
    lines = ["| arm | opponent | mode | games | +W =D -L | score | 95% interval | Elo vs this rung | "
             "conversion | final material | terminations |",
             "|---|---|---|---:|---|---:|---|---|---|---:|---|"]
    for arm in arms(summary):
        for m in arm_matches(summary, arm):
            elo = (f"{'>' if m['score'] == 1 else '<'} {m['elo']:.0f}" if m["elo_bound"]
                   else f"{m['elo']:.0f} [{m['elo_lo']:.0f}, {m['elo_hi']:.0f}]")
            conv = ("-" if m.get("conversion_opportunities") is None else
                    f"{m['conversion_converted']}/{m['conversion_opportunities']}")
            terms = ", ".join(f"{k} {v}" for k, v in sorted(m["terminations"].items(), key=lambda kv: -kv[1]))
            mode = m["mode"] if m["visits"] is None else f"{m['mode']} ({m['visits']} visits)"
            lines.append(f"| {arm} | {m['opponent']} | {mode} | {m['games']} | +{m['wins']} ={m['draws']} "
                         f"-{m['losses']} | {m['score']:.3f} | [{m['score_lo']:.3f}, {m['score_hi']:.3f}] | {elo} | "
                         f"{conv} | {m['final_material']:+.1f} | {terms} |")
    return lines


def headline_table(summary: dict[str, Any]) -> list[str]:
    """Per mode: the final and control arms' joint ratings and final minus control."""
    lines = ["| mode | final artifact, joint rating | control (untrained), joint rating | "
             "final minus control, Elo [95%] |", "|---|---|---|---|"]
    for mode in ("searched", "policy"):
        cells = []
        for arm in (FINAL, CONTROL):
            saved = joint_of(summary, arm, mode)
            cells.append("not played" if saved is None else saved.get("describe", "?"))
        gain = gain_of(summary, mode)
        cells.append("not measured (no control arm)" if gain is None else gain["describe"])
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return lines


def policy_lines(summary: dict[str, Any]) -> list[str]:
    """Policy-only play: stalemates, conversion of 5+ pawn leads and mates in one, per arm and rung."""
    lines = ["## Policy-only play", "",
             "The network's top move, no search. Stalemates: games that ended in stalemate (each a half "
             "point given away, usually from far ahead). Leads won: games where our side led by 5+ pawns at "
             "some point / those it won. Mates in one: turns after the book with a mate on the board / those "
             "on which it mated (`evaluate.mates`; `-` where the run did not count them).", "",
             "| arm | opponent | games | score | stalemates | 5+ pawn leads won | share | mates in one taken |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    rows = 0
    for arm in arms(summary):
        for p in policy_report(summary, arm):
            won = "-" if p.opportunities is None else f"{p.converted}/{p.opportunities}"
            lines.append(f"| {arm} | {p.opponent} | {p.games} | {p.score:.3f} | {p.stalemates} | {won} | "
                         f"{'-' if p.conversion is None else _percent(p.conversion)} | {p.mates} |")
            rows += 1
    return [*lines, ""] if rows else []


def fit_lines(summary: dict[str, Any]) -> list[str]:
    """How each arm's policy fits the run's own self-play positions (``own_targets``,
    ``chesszero.evaluate.mate_recall``); nothing for a run from before it was measured."""
    fit = summary.get("own_targets")
    if not fit:
        return []
    first, last = fit["generations"]
    lines = ["## Fit to its own targets", "",
             f"The searched positions of generations {first}-{last} ({fit['rows']} rows), replayed with their "
             f"history: on a seeded {fit['sample_fraction']:.0%} sample, how often each network's top legal move "
             "is the stored search target's top move (and its probability on that move); on every position "
             "with a mate in one, how often the target's and the network's top moves mate "
             "(`python reports/mate_recall.py`).", "",
             "| arm | top move = target's top move | probability on it (median) | positions with a mate in one "
             "| target's top move mates | network's top move mates | mass on the mates (median) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for arm in ("final", "control"):
        if arm not in fit:
            continue
        a, m = fit[arm]["target_agreement"], fit[arm]["mate_recall"]
        share = f"{a['agree']}/{a['positions']} ({_percent(a['agree'] / a['positions'])})" if a["positions"] else "-"
        top = f"{m['top_mates']} ({_percent(m['top_mates'] / m['positions'])})" if m["positions"] else "-"
        lines.append(f"| {arm} | {share} | {_f(a['target_prob_median'], 3)} | {m['positions']} | "
                     f"{m['target_top_mates']} | {top} | {_f(m['mass_median'], 3)} |")
    return [*lines, "", *_stalemate_lines(fit)]


def _stalemate_lines(fit: dict[str, Any]) -> list[str]:
    """The stalemate rows of ``own_targets`` (runs from 2026-12-06 on)."""
    arms = [arm for arm in ("final", "control") if "stalemate_risk" in fit.get(arm, {})]
    if not arms:
        return []
    lines = ["On the positions where some legal move stalemates: how often the target's and the network's "
             "top moves stalemate, and their mean weight on the stalemating moves.", "",
             "| arm | positions with a stalemating move | target's top move stalemates | network's top move "
             "stalemates | target's weight on them (mean) | network's mass on them (mean) |",
             "|---|---:|---:|---:|---:|---:|"]
    for arm in arms:
        r = fit[arm]["stalemate_risk"]
        top = f"{r['top_stalemates']} ({_percent(r['top_stalemates'] / r['positions'])})" if r["positions"] else "-"
        lines.append(f"| {arm} | {r['positions']} | {r['target_top_stalemates']} | {top} | "
                     f"{_f(r['target_mass_mean'], 3)} | {_f(r['mass_mean'], 3)} |")
    return [*lines, ""]


def final_section(summary: dict[str, Any]) -> list[str]:
    final = summary.get("final_evaluation", {})
    climb = final.get("climb")
    protocol = (f"Each arm climbs the ladder ({', '.join(climb['order'])}) and {climb['rule']}; "
                if climb else f"Opponents: {', '.join(final.get('opponents', [])) or '?'}; ")
    return [
        "## Final evaluation",
        "",
        f"The final active artifact (`{summary.get('final_artifact', '?')}`, generation "
        f"{summary.get('active_generation', '?')}) and, under the same protocol, "
        + (f"the control arm: the campaign's untrained network (`{summary['control_artifact']}`). "
           if summary.get("control_artifact") else "no control arm (a run from before issue 22). ")
        + f"{protocol}policy only and searched "
        f"({final.get('visits', '?')} visits), each on its own. Per rung {final.get('openings', '?')} openings, each "
        f"with both colours ({final.get('games_per_match', '?')} games), at most {final.get('max_plies', '?')} "
        "plies (then a draw).",
        "",
        "Joint rating: maximum likelihood over every rung the arm climbed (rung ratings fixed, "
        f"{final.get('ladder', '?')}), 95% bootstrap interval over opening pairs, or a one-sided bound (`>`: "
        "every game won, `<`: every game lost). Final minus control: the difference of the joint ratings, "
        "interval by bootstrap over both arms' opening pairs (each arm resampled on its own); a bound "
        "when either arm is one.",
        "",
        *headline_table(summary),
        "",
        "Every match (score intervals: 95% bootstrap over opening pairs, a one-sided Clopper-Pearson bound "
        "when every game was won or lost; Elo vs this rung anchored at the rung's rating):",
        "",
        *final_table(summary),
        "",
    ]


def _rating(row: dict[str, float], mode: str) -> str:
    r = rating_from(row, partial(M.joint_elo_key, mode))
    return "-" if r is None else r.describe()


def _scores(row: dict[str, float], mode: str, rungs: list[str]) -> str:
    parts = [f"{r} {row[M.score_key(mode, r)]:.2f}" for r in rungs
             if not math.isnan(row.get(M.score_key(mode, r), math.nan))]
    return ", ".join(parts) or "-"


SHORT_TERMINATIONS = {"checkmate": "mate", "threefold_repetition": "threefold", "fifty_moves": "fifty",
                      "insufficient_material": "insufficient", "ply_cap": "ply cap", "resignation": "resign"}


def _conversion_header(key: str) -> str:
    if key == SELFPLAY_CONVERSION:
        return "conversion self-play"
    _, mode, rung = key.split("/")
    return f"conversion {rung} ({mode})"


def curve_table(curve: Curve, summary: dict[str, Any]) -> list[str]:
    shares = termination_shares(curve)
    conversions = conversion_columns(curve)
    rungs = rung_order(curve, summary)
    head = (["gen", "minutes", "games", "non-decisive"] + [SHORT_TERMINATIONS.get(t, t) for t in M.TERMINATIONS]
            + ["value loss", "policy loss", "searched rating", "policy rating", "searched scores",
               "policy scores"] + [_conversion_header(c) for c in conversions])
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * (len(head) - 4 - len(conversions))
             + "---|---|---|---|" + "---:|" * len(conversions)]
    for i, row in enumerate(curve.rows):
        cells = [str(int(row[GENERATION])), _f(row[WALL_MIN], 1), _f(row.get(M.SELFPLAY_GAMES), 0),
                 _f(row.get(M.NON_DECISIVE))]
        cells += [_percent(shares[t][i]) for t in M.TERMINATIONS]
        cells += [_f(row.get(M.loss_key("value")), 3), _f(row.get(M.loss_key("policy")), 3),
                  _rating(row, "searched"), _rating(row, "policy"),
                  _scores(row, "searched", rungs), _scores(row, "policy", rungs)]
        cells += [_f(row.get(c)) for c in conversions]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def promotion_table(curve: Curve) -> list[str]:
    """The candidate's promotion matches, one row per generation that played one."""
    rows = [r for r in curve.rows if not math.isnan(r.get(M.PROMOTION_SCORE, math.nan))]
    if not rows:
        return []
    lines = ["| generation | minutes | candidate score | Elo difference [95%] | consecutive passes | promoted |",
             "|---:|---:|---:|---|---:|---|"]
    for r in rows:
        elo, lo, hi = (r.get(k, math.nan) for k in (M.PROMOTION_ELO, f"{M.PROMOTION_ELO}_lo",
                                                    f"{M.PROMOTION_ELO}_hi"))
        lines.append(f"| {int(r[GENERATION])} | {_f(r[WALL_MIN], 1)} | {_f(r[M.PROMOTION_SCORE], 3)} | "
                     f"{_f(elo, 0)} [{_f(lo, 0)}, {_f(hi, 0)}] | {_f(r.get(M.PROMOTION_PASSES), 0)} | "
                     f"{'yes' if r.get(M.PROMOTION_PROMOTED) == 1.0 else 'no'} |")
    return lines


def progressive_lines(curve: Curve, summary: dict[str, Any]) -> list[str]:
    """The progressive-sizing section of ``learning.md`` (empty for a one-size run)."""
    events = size_events(curve, summary)
    table = promotion_table(curve)
    if not events and not table:
        return []
    sizes = summary.get("sizes")
    lines = ["## Progressive sizing", ""]
    if sizes:
        lines += [f"Sizes: {' -> '.join(sizes)}.", ""]
    lines += [f"- generation {e.generation} ({_f(e.wall_min, 1)} min): {e.label()}" for e in events]
    if table:
        lines += ["", "Promotion matches (candidate against the active artifact, paired openings, both colours; "
                  "two consecutive passes promote):", "", *table]
    return [*lines, ""]


def recipe_line(summary: dict[str, Any]) -> str:
    diff = summary.get("recipe_diff")
    if diff is None:
        return "- recipe diff from the cpu preset: not recorded"
    if not diff:
        return f"- recipe: the {summary.get('recipe_base', 'cpu')} preset as it stands"
    shown = ", ".join(f"`{k}={v}`" for k, v in list(diff.items())[:12])
    more = f" and {len(diff) - 12} more (summary.json)" if len(diff) > 12 else ""
    return f"- recipe diff from the {summary.get('recipe_base', 'cpu')} preset ({len(diff)} keys): {shown}{more}"


def host_speed_line(summary: dict[str, Any]) -> str:
    """The host's speed probed before and after the run (benchmarks/host_speed.py): runs on hosts
    of different speeds compare per generation, not by wall clock."""
    speeds = host_speeds(summary)
    if speeds is None:
        return "- host speed: not probed (the run predates benchmarks/host_speed.py)"
    before, after = speeds
    line = f"- host speed: before the campaign {before.describe()}; after the final evaluation {after.describe()}"
    if after.differs(before):
        line += " (**the host's speed changed during the run**: its wall-clock figures mix recipe and host)"
    return line


def stage_table(summary: dict[str, Any], generations: int) -> list[str]:
    """Where the campaign's wall time went, per stage (``phaselog.stage_times``); a run that
    predates the record gets a line saying so."""
    stages = summary.get("stages")
    if stages is None:
        return ["The run predates the per-stage record (`phases.jsonl` in its campaign folder has it).", ""]
    lines = ["| stage | spans | minutes | seconds per generation | share of the campaign |",
             "|---|---:|---:|---:|---:|"]
    for row in stages:
        share = "inside another stage" if row.get("nested") else _percent(float(row["share"]))
        per = float(row["seconds"]) / generations if generations else math.nan
        lines.append(f"| {row['stage']} | {row['spans']} | {float(row['seconds']) / 60:.1f} | {_f(per, 1)} | "
                     f"{share} |")
    return [*lines, ""]


def qat_lines(curve: Curve) -> list[str]:
    """How many publications fine-tuned (``publish/qat_steps``; absent before the metric existed)."""
    if not curve.has(M.PUBLISH_QAT_STEPS):
        return []
    steps = [v for v in curve.column(M.PUBLISH_QAT_STEPS) if not math.isnan(v)]
    tuned = sum(v > 0 for v in steps)
    agreement = [v for v in curve.column(M.fidelity_key("agreement")) if not math.isnan(v)]
    lowest = f"; the gate's top-1 agreement was {min(agreement):.3f} at its lowest" if agreement else ""
    return [f"Publications that ran quantisation-aware fine-tuning: {tuned} of {len(steps)} "
            f"(`publish/qat_steps` > 0){lowest}.", ""]


def markdown(curve: Curve, summary: dict[str, Any], figure: str) -> str:
    machine = summary.get("machine", {})
    git = summary.get("git", {})
    wall = summary.get("wall", {})
    conversions = conversion_columns(curve)
    lines = [
        f"# Learning benchmark `{summary.get('campaign', '?')}`",
        "",
        f"Generated by `python reports/learning.py` from `{CURVE}` and `{SUMMARY}`; do not edit.",
        "",
        f"- run: `{summary.get('command', '?')}`; {summary.get('preset', '?')} preset from random weights, "
        f"{summary.get('hours', '?')} h wall budget, started {summary.get('started', '?')}",
        recipe_line(summary),
        f"- {len(curve.rows)} generations in {_f(wall.get('campaign_s', math.nan) / 60, 1)} min "
        f"(campaign-recorded {_f(wall.get('campaign_recorded_s', math.nan) / 60, 1)} min), final evaluation "
        f"{_f(wall.get('final_evaluation_s', math.nan) / 60, 1)} min",
        f"- machine: {machine.get('cpu', '?')}, nproc {machine.get('usable_cpus', '?')} "
        f"(cpu_count {machine.get('cpus', '?')}), load {machine.get('load_1min_at_start', '?')} at start, "
        f"{machine.get('system', '?')}, Python {machine.get('python', '?')}",
        f"- commit {git.get('commit', '?')}{' (uncommitted changes)' if git.get('dirty') else ''}",
        host_speed_line(summary),
        "",
        *final_section(summary),
        *policy_lines(summary),
        *fit_lines(summary),
        "## Targets",
        "",
        *targets_table(curve, summary),
        "",
        *progressive_lines(curve, summary),
        "## Where the campaign's time went",
        "",
        "Wall time per stage from the campaign's phase log (finished spans; self-play is the wait for "
        "the actors after training, the overlap actors play inside the train stage).",
        "",
        *stage_table(summary, len(curve.rows)),
        *qat_lines(curve),
        "## Learning curve",
        "",
        f"![learning curve]({figure})",
        "",
        "Terminations are shares of each generation's self-play games; ratings and scores are the "
        "campaign's ladder evaluations (on its cadence, with its own openings, rungs and visits; ratings "
        "are joint ratings with 95% intervals, `> x` / `< x` a bound); "
        + ("conversion columns as the campaign recorded them." if conversions
           else "this campaign recorded no conversion metrics."),
        "",
        *curve_table(curve, summary),
        "",
    ]
    return "\n".join(lines)
