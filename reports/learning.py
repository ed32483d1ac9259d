"""Figure and table of a learning benchmark run, from its saved curve.

Reads ``<folder>/curve.csv`` (``learning_curve``) and ``<folder>/summary.json``
(written by ``benchmarks/bench_learning.py``) and writes:

- ``learning.png``: ladder scores per rung and mode against generation and
  against wall minutes, self-play termination shares per generation
  (stacked), the non-decisive rate with any recorded conversion rates, the
  value and policy losses, and the final evaluation with its 95% intervals;
- ``learning.md``: the run (machine, commit, budget), the final evaluation
  table, issue 10's targets next to what was measured, and the curve per
  generation.

Run by ``dvc repro learning-figure`` (dvc.yaml) or by hand::

    python reports/learning.py reports/learning/<campaign>
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_curve import (  # noqa: E402
    GENERATION,
    SELFPLAY_CONVERSION,
    WALL_MIN,
    Curve,
    conversion_columns,
    read_csv,
    termination_shares,
)

from chesszero.campaign import metrics as M  # noqa: E402

CURVE = "curve.csv"
SUMMARY = "summary.json"
FIGURE = "learning.png"
TABLE = "learning.md"
MODE_STYLE = {"searched": "-", "policy": "--"}


@dataclass(frozen=True)
class Target:
    """One of issue 10's targets for the 2-hour benchmark."""

    label: str
    threshold: float
    at_least: bool
    measure: Callable[[Curve, dict[str, Any]], float | None]

    def verdict(self, value: float | None) -> str:
        if value is None or math.isnan(value):
            return "not measured"
        ok = value >= self.threshold if self.at_least else value < self.threshold
        return "met" if ok else "not met"

    def describe(self) -> str:
        return f"{'>=' if self.at_least else '<'} {self.threshold:g}"


def final_match(summary: dict[str, Any], opponent: str, mode: str) -> dict[str, Any] | None:
    for match in summary.get("final_evaluation", {}).get("matches", []):
        if match.get("opponent") == opponent and match.get("mode") == mode:
            return match
    return None


def _final_score(opponent: str, mode: str) -> Callable[[Curve, dict[str, Any]], float | None]:
    def measure(_: Curve, summary: dict[str, Any]) -> float | None:
        match = final_match(summary, opponent, mode)
        return None if match is None else float(match["score"])
    return measure


def _last(key: str) -> Callable[[Curve, dict[str, Any]], float | None]:
    def measure(curve: Curve, _: dict[str, Any]) -> float | None:
        return curve.last(key) if curve.has(key) else None
    return measure


TARGETS = (
    Target("final score vs random, searched", 0.95, True, _final_score("random", "searched")),
    Target("final score vs greedy, searched", 0.75, True, _final_score("greedy", "searched")),
    Target("final score vs random, policy only", 0.80, True, _final_score("random", "policy")),
    Target("self-play non-decisive rate, last generation", 0.50, False, _last(M.NON_DECISIVE)),
    Target("self-play conversion rate, last generation", 0.90, True, _last("selfplay/conversion")),
)
"""Issue 10's targets (2 hours, 2 cores, from random weights, 100 games per opponent)."""


# ------------------------------------------------------------------ figure


def rung_order(curve: Curve, summary: dict[str, Any]) -> list[str]:
    """Every rung of the run: the final evaluation's opponents (weakest first), then the rest."""
    final = summary.get("final_evaluation", {})
    named = [*final.get("opponents", []), *(m["opponent"] for m in final.get("matches", []))]
    others = sorted({*curve.rungs("searched"), *curve.rungs("policy")} - set(named))
    return list(dict.fromkeys([*named, *others]))


@dataclass(frozen=True)
class SizeEvent:
    """A progressive-sizing event of the run: a candidate started or promoted."""

    generation: int
    wall_min: float
    kind: str  # "candidate" or "promoted"
    size: str

    def label(self) -> str:
        return f"{self.size} candidate starts" if self.kind == "candidate" else f"{self.size} promoted"


def _stage_size(sizes: list[str], stage: int) -> str:
    return sizes[stage] if 0 <= stage < len(sizes) else f"stage {stage}"


def size_events(curve: Curve, summary: dict[str, Any]) -> list[SizeEvent]:
    """Candidate starts (``candidate/started``) and promotions (``progressive/stage``
    rising) in generation order; sizes from the summary's ``sizes`` when recorded."""
    sizes = list(summary.get("sizes", []))
    events, stage = [], 0
    for row in curve.rows:
        g, wall = int(row[GENERATION]), row[WALL_MIN]
        now = row.get(M.PROGRESSIVE_STAGE, math.nan)
        if row.get(M.CANDIDATE_STARTED, math.nan) == 1.0:
            events.append(SizeEvent(g, wall, "candidate", _stage_size(sizes, stage + 1)))
        if not math.isnan(now) and int(now) > stage:
            stage = int(now)
            events.append(SizeEvent(g, wall, "promoted", _stage_size(sizes, stage)))
    return events


def mark_events(ax: Any, events: list[SizeEvent], x: str) -> None:
    """Vertical lines at the size events (x: ``GENERATION`` or ``WALL_MIN``)."""
    for e in events:
        at = e.generation if x == GENERATION else e.wall_min
        if math.isnan(at):
            continue
        style = {"color": "tab:green", "ls": ":"} if e.kind == "candidate" else {"color": "tab:red", "ls": "-."}
        ax.axvline(at, lw=1.2, alpha=0.8, label=e.label(), **style)


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


def _rung_colors(rungs: list[str]) -> dict[str, Any]:
    cmap = plt.get_cmap("tab10")
    return {r: cmap(i % 10) for i, r in enumerate(rungs)}


def _ladder_panel(ax: Any, curve: Curve, x: str, xlabel: str, colors: dict[str, Any]) -> None:
    drew = False
    for mode, style in MODE_STYLE.items():
        for rung in [r for r in colors if r in curve.rungs(mode)]:
            xs, ys = curve.points(M.score_key(mode, rung), x)
            ax.plot(xs, ys, style, marker="o", markersize=3, color=colors[rung], label=f"{rung} ({mode})")
            drew = True
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("score")
    ax.grid(alpha=0.3)
    if drew:
        ax.legend(fontsize=7, ncol=2)
    else:
        ax.text(0.5, 0.5, "no ladder evaluation recorded", ha="center", transform=ax.transAxes)


def _terminations_panel(ax: Any, curve: Curve) -> None:
    gens = curve.generations
    bottom = [0.0] * len(gens)
    for name, shares in termination_shares(curve).items():
        if any(shares):
            ax.bar(gens, shares, bottom=bottom, width=0.9, label=name)
            bottom = [b + s for b, s in zip(bottom, shares, strict=True)]
    ax.set_ylim(0, 1)
    ax.set_xlabel("generation")
    ax.set_ylabel("share of self-play games")
    ax.set_title("Self-play terminations", fontsize=10)
    ax.legend(fontsize=7, ncol=2)


def _rates_panel(ax: Any, curve: Curve, colors: dict[str, Any]) -> None:
    xs, ys = curve.points(M.NON_DECISIVE)
    ax.plot(xs, ys, marker="o", markersize=3, color="black", label="self-play non-decisive rate")
    conversions = conversion_columns(curve)
    for key in conversions:
        xs, ys = curve.points(key)
        if key == SELFPLAY_CONVERSION:
            ax.plot(xs, ys, marker="s", markersize=4, lw=2, color="tab:purple", label="self-play conversion")
        else:
            _, mode, rung = key.split("/")
            ax.plot(xs, ys, MODE_STYLE.get(mode, ":"), marker=".", color=colors.get(rung, "grey"),
                    alpha=0.7, label=f"conversion vs {rung} ({mode})")
    if not conversions:
        ax.text(0.5, 0.05, "conversion rate not recorded by this campaign", ha="center", fontsize=8,
                transform=ax.transAxes)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("generation")
    ax.set_ylabel("rate")
    ax.set_title("Non-decisive rate; conversion of 5+ pawn leads (where there were any)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _loss_panel(ax: Any, curve: Curve) -> None:
    for key, label in ((M.loss_key("value"), "value loss"), (M.loss_key("policy"), "policy loss")):
        xs, ys = curve.points(key)
        ax.plot(xs, ys, marker="o", markersize=3, label=label)
    ax.axhline(math.log(3), color="grey", lw=0.8, ls=":", label="ln 3 (uniform WDL)")
    ax.set_xlabel("generation")
    ax.set_ylabel("loss")
    ax.set_title("Training losses", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _final_panel(ax: Any, summary: dict[str, Any], colors: dict[str, Any]) -> None:
    final = summary.get("final_evaluation", {})
    matches = final.get("matches", [])
    opponents = list(dict.fromkeys(m["opponent"] for m in matches))
    modes = list(dict.fromkeys(m["mode"] for m in matches))
    width = 0.8 / max(1, len(modes))
    for j, mode in enumerate(modes):
        for i, opp in enumerate(opponents):
            m = final_match(summary, opp, mode)
            if m is None:
                continue
            err = [[m["score"] - m["score_lo"]], [m["score_hi"] - m["score"]]]
            ax.bar(i + (j - (len(modes) - 1) / 2) * width, m["score"], width, yerr=err, capsize=3,
                   color=colors.get(opp, "grey"), alpha=1.0 if mode == "searched" else 0.5,
                   hatch=None if mode == "searched" else "//", edgecolor="black", linewidth=0.5)
    ax.set_xticks(range(len(opponents)), opponents)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95% interval)")
    visits = final.get("visits")
    ax.set_title(f"Final evaluation, {final.get('games_per_match', '?')} games per match: "
                 f"solid {visits} visits, hatched policy only", fontsize=10)
    ax.grid(alpha=0.3, axis="y")


def draw_figure(curve: Curve, summary: dict[str, Any], path: Path) -> Path:
    colors = _rung_colors(rung_order(curve, summary))
    events = size_events(curve, summary)
    fig, axes = plt.subplots(3, 2, figsize=(13, 13))
    mark_events(axes[0][0], events, GENERATION)
    _ladder_panel(axes[0][0], curve, GENERATION, "generation", colors)
    axes[0][0].set_title("Ladder scores during the campaign (solid searched, dashed policy)", fontsize=10)
    mark_events(axes[0][1], events, WALL_MIN)
    _ladder_panel(axes[0][1], curve, WALL_MIN, "wall minutes", colors)
    axes[0][1].set_title("Ladder scores against wall time", fontsize=10)
    _terminations_panel(axes[1][0], curve)
    _rates_panel(axes[1][1], curve, colors)
    mark_events(axes[2][0], events, GENERATION)
    _loss_panel(axes[2][0], curve)
    _final_panel(axes[2][1], summary, colors)
    fig.suptitle(f"Learning benchmark {summary.get('campaign', '?')}: {summary.get('preset', '?')} preset, "
                 f"{len(curve.rows)} generations, {summary.get('hours', '?')} h budget")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


# ------------------------------------------------------------------ table


def _f(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def final_table(summary: dict[str, Any]) -> list[str]:
    final = summary.get("final_evaluation", {})
    lines = ["| opponent | mode | games | +W =D -L | score | 95% interval | Elo (95% interval) | "
             "conversion | final material | terminations |",
             "|---|---|---:|---|---:|---|---|---|---:|---|"]
    for m in final.get("matches", []):
        elo = (f"{'>' if m['score'] == 1 else '<'} {m['elo']:.0f}" if m["elo_bound"]
               else f"{m['elo']:.0f} [{m['elo_lo']:.0f}, {m['elo_hi']:.0f}]")
        conv = ("-" if m.get("conversion_opportunities") is None else
                f"{m['conversion_converted']}/{m['conversion_opportunities']}")
        terms = ", ".join(f"{k} {v}" for k, v in sorted(m["terminations"].items(), key=lambda kv: -kv[1]))
        mode = m["mode"] if m["visits"] is None else f"{m['mode']} ({m['visits']} visits)"
        lines.append(f"| {m['opponent']} | {mode} | {m['games']} | +{m['wins']} ={m['draws']} -{m['losses']} | "
                     f"{m['score']:.3f} | [{m['score_lo']:.3f}, {m['score_hi']:.3f}] | {elo} | {conv} | "
                     f"{m['final_material']:+.1f} | {terms} |")
    return lines


def joint_lines(summary: dict[str, Any]) -> list[str]:
    """The joint maximum-likelihood rating per mode, when the run recorded it."""
    joint = summary.get("final_evaluation", {}).get("joint", {})
    if not joint:
        return []
    lines = ["Joint maximum-likelihood rating over the rungs played (rung ratings fixed from the ladder; "
             "95% bootstrap interval, a bound when every game was won or lost):", ""]
    lines += [f"- {mode}: {value.get('describe', '?')}" for mode, value in joint.items()]
    return [*lines, ""]


def targets_table(curve: Curve, summary: dict[str, Any]) -> list[str]:
    lines = ["| target (issue 10) | required | measured | verdict |", "|---|---|---:|---|"]
    for t in TARGETS:
        value = t.measure(curve, summary)
        lines.append(f"| {t.label} | {t.describe()} | {_f(value)} | {t.verdict(value)} |")
    return lines


SHORT_TERMINATIONS = {"checkmate": "mate", "threefold_repetition": "threefold", "fifty_moves": "fifty",
                      "insufficient_material": "insufficient", "ply_cap": "ply cap", "resignation": "resign"}


def _scores(row: dict[str, float], mode: str, rungs: list[str]) -> str:
    parts = [f"{r} {row[M.score_key(mode, r)]:.2f}" for r in rungs
             if not math.isnan(row.get(M.score_key(mode, r), math.nan))]
    return ", ".join(parts) or "-"


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
            + ["value loss", "policy loss", "searched scores", "policy scores"]
            + [_conversion_header(c) for c in conversions])
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * (len(head) - 2 - len(conversions))
             + "---|---|" + "---:|" * len(conversions)]
    for i, row in enumerate(curve.rows):
        cells = [str(int(row[GENERATION])), _f(row[WALL_MIN], 1), _f(row.get(M.SELFPLAY_GAMES), 0),
                 _f(row.get(M.NON_DECISIVE))]
        cells += [_percent(shares[t][i]) for t in M.TERMINATIONS]
        cells += [_f(row.get(M.loss_key("value")), 3), _f(row.get(M.loss_key("policy")), 3),
                  _scores(row, "searched", rungs), _scores(row, "policy", rungs)]
        cells += [_f(row.get(c)) for c in conversions]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(curve: Curve, summary: dict[str, Any], figure: str = FIGURE) -> str:
    machine = summary.get("machine", {})
    git = summary.get("git", {})
    wall = summary.get("wall", {})
    final = summary.get("final_evaluation", {})
    conversions = conversion_columns(curve)
    lines = [
        f"# Learning benchmark `{summary.get('campaign', '?')}`",
        "",
        f"Generated by `python reports/learning.py` from `{CURVE}` and `{SUMMARY}`; do not edit.",
        "",
        f"- run: `{summary.get('command', '?')}`; {summary.get('preset', '?')} preset from random weights, "
        f"{summary.get('hours', '?')} h wall budget, started {summary.get('started', '?')}",
        f"- {len(curve.rows)} generations in {_f(wall.get('campaign_s', math.nan) / 60, 1)} min "
        f"(campaign-recorded {_f(wall.get('campaign_recorded_s', math.nan) / 60, 1)} min), final evaluation "
        f"{_f(wall.get('final_evaluation_s', math.nan) / 60, 1)} min",
        f"- machine: {machine.get('cpu', '?')}, nproc {machine.get('usable_cpus', '?')} "
        f"(cpu_count {machine.get('cpus', '?')}), load {machine.get('load_1min_at_start', '?')} at start, "
        f"{machine.get('system', '?')}, Python {machine.get('python', '?')}",
        f"- commit {git.get('commit', '?')}{' (uncommitted changes)' if git.get('dirty') else ''}",
        "",
        "## Final evaluation",
        "",
        f"The final active artifact (`{summary.get('final_artifact', '?')}`, generation "
        f"{summary.get('active_generation', '?')}) against each opponent: {final.get('openings', '?')} "
        f"openings, each with both colours ({final.get('games_per_match', '?')} games), at most "
        f"{final.get('max_plies', '?')} plies (then a draw). Score intervals: 95% bootstrap over opening "
        "pairs (one-sided Clopper-Pearson bound when every game was won or lost); Elo anchored at the "
        f"rung's ladder rating ({final.get('ladder', '?')}). Conversion: games where our side led by "
        "5+ pawns at some point / those it won (`-`: not measured).",
        "",
        *final_table(summary),
        "",
        *joint_lines(summary),
        "## Targets",
        "",
        *targets_table(curve, summary),
        "",
        *progressive_lines(curve, summary),
        "## Learning curve",
        "",
        f"![learning curve]({figure})",
        "",
        "Terminations are shares of each generation's self-play games; scores are the campaign's "
        "ladder evaluations (on its cadence, with its own openings and visits); "
        + ("conversion columns as the campaign recorded them." if conversions
           else "this campaign recorded no conversion metrics."),
        "",
        *curve_table(curve, summary),
        "",
    ]
    return "\n".join(lines)


def load_run(folder: Path) -> tuple[Curve, dict[str, Any]]:
    """The curve and summary a benchmark run saved in `folder`."""
    for name in (CURVE, SUMMARY):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder}: no {name} (a folder written by benchmarks/bench_learning.py)")
    return read_csv(folder / CURVE), json.loads((folder / SUMMARY).read_text())


def redraw(folder: Path) -> tuple[Path, Path]:
    """Writes ``learning.png`` and ``learning.md`` from the folder's curve and summary."""
    curve, summary = load_run(folder)
    figure = draw_figure(curve, summary, folder / FIGURE)
    table = folder / TABLE
    table.write_text(markdown(curve, summary))
    return figure, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help=f"folder with {CURVE} and {SUMMARY}")
    args = parser.parse_args(argv)
    try:
        figure, table = redraw(args.folder)
    except (OSError, ValueError) as exc:
        print(f"learning: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {figure} and {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
