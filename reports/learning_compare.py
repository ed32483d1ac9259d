"""Two learning benchmark runs side by side: a run against a baseline at the same wall time.

Issue 11's target: on the ``cpu`` preset, a campaign with progressive sizing
reaches at least the strength of the fixed-size campaign at the same wall
time (final scores against the random and greedy movers at 64 visits, 100
games each). Reads each folder's ``curve.csv`` and ``summary.json`` (written by
``benchmarks/bench_learning.py``) and writes into the run's folder:

- ``comparison.png``: the campaign's ladder scores against wall minutes for
  both runs (searched and policy only, one panel each), the run's candidate
  starts and promotions marked; the final scores with their 95% intervals;
- ``comparison.md``: both runs' setup, the final evaluation side by side with
  a verdict per searched match, and the progressive-sizing events.

A verdict is ``met`` when the run's score is at least the baseline's,
``within interval`` when it is lower but the run's 95% interval reaches the
baseline's score, else ``not met``. Issue 11's target is named only when the
two runs differ in their sizes, or either did not record them (a sizing
comparison); two runs of the same recorded sizes (a recipe ablation) get
the same per-match verdicts, worded without a target.

With ``--table OUT.md`` it writes instead one table of any number of runs
(ablations): per run its recipe diff from the ``cpu`` preset, the final and
control joint ratings, the gain per mode, and policy-only stalemates and
leads won.

Run by ``dvc repro learning-compare`` (dvc.yaml) or by hand::

    python reports/learning_compare.py reports/learning/<baseline> reports/learning/<run>
    python reports/learning_compare.py --table reports/learning/ablations.md reports/learning/<run> ...
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning import mark_events  # noqa: E402
from learning_curve import WALL_MIN, Curve  # noqa: E402
from learning_host import DRIFT, host_speeds  # noqa: E402
from learning_summary import (  # noqa: E402
    CONTROL,
    CURVE,
    FINAL,
    SUMMARY,
    final_match,
    gain_of,
    joint_of,
    load_run,
    policy_report,
    size_events,
)
from learning_table import progressive_lines  # noqa: E402

from chesszero.campaign import metrics as M  # noqa: E402

FIGURE = "comparison.png"
TABLE = "comparison.md"
TARGET_OPPONENTS = ("random", "greedy")
"""The target's opponents, searched at the final evaluation's visits."""


@dataclass(frozen=True)
class Run:
    """One benchmark run's saved results."""

    folder: Path
    curve: Curve
    summary: dict[str, Any]

    @classmethod
    def load(cls, folder: Path) -> Run:
        return cls(folder, *load_run(folder))

    @property
    def name(self) -> str:
        return str(self.summary.get("campaign", self.folder.name))

    def sizes(self) -> str:
        sizes = self.summary.get("sizes")
        return " -> ".join(sizes) if sizes else "not recorded"

    def titled(self) -> str:
        """The name, with the sizes when the run recorded them."""
        sizes = self.summary.get("sizes")
        return f"{self.name} ({' -> '.join(sizes)})" if sizes else self.name

    def matches(self) -> list[tuple[str, str]]:
        """(opponent, mode) of the final arm's matches."""
        return [(m["opponent"], m["mode"]) for m in self.summary.get("final_evaluation", {}).get("matches", [])
                if m.get("arm", FINAL) == FINAL]


def verdict(run: dict[str, Any] | None, base: dict[str, Any] | None) -> str:
    if run is None or base is None:
        return "not measured"
    if run["score"] >= base["score"]:
        return "met"
    return "within interval" if run["score_hi"] >= base["score"] else "not met"


def _score(m: dict[str, Any] | None) -> str:
    return "-" if m is None else f"{m['score']:.3f} [{m['score_lo']:.3f}, {m['score_hi']:.3f}]"


RECIPE_WORDS = {"met": "no worse", "not met": "worse"}
"""The verdicts' words in a comparison without a target (``within interval`` and
``not measured`` keep theirs)."""


def sizing_comparison(base: Run, run: Run) -> bool:
    """True when the runs differ in their sizes, or when either did not record
    them (runs from before sizes were recorded): issue 11's target applies."""
    recorded = base.summary.get("sizes") and run.summary.get("sizes")
    return not recorded or base.sizes() != run.sizes()


def final_rows(base: Run, run: Run) -> list[str]:
    lines = [f"| opponent | mode | {base.name} (baseline) | {run.name} | difference | verdict |",
             "|---|---|---|---|---:|---|"]
    sizing = sizing_comparison(base, run)
    for opponent, mode in dict.fromkeys([*base.matches(), *run.matches()]):
        b, r = final_match(base.summary, opponent, mode), final_match(run.summary, opponent, mode)
        diff = "-" if b is None or r is None else f"{r['score'] - b['score']:+.3f}"
        if not sizing:  # no target: say what the verdict means
            judged = RECIPE_WORDS.get(verdict(r, b), verdict(r, b))
        elif mode == "searched":
            judged = verdict(r, b) + (" (target)" if opponent in TARGET_OPPONENTS else "")
        else:
            judged = "not a target"
        lines.append(f"| {opponent} | {mode} | {_score(b)} | {_score(r)} | {diff} | {judged} |")
    return lines


def target_met(base: Run, run: Run) -> bool | None:
    """True when every target match is met or within interval; None when one is missing."""
    verdicts = [verdict(final_match(run.summary, o, "searched"), final_match(base.summary, o, "searched"))
                for o in TARGET_OPPONENTS]
    if "not measured" in verdicts:
        return None
    return all(v in ("met", "within interval") for v in verdicts)


def _setup(run: Run, role: str) -> str:
    s, wall = run.summary, run.summary.get("wall", {})
    git = s.get("git", {})
    minutes = wall.get("campaign_recorded_s", math.nan) / 60
    return (f"- {role} `{run.name}`: sizes {run.sizes()}, {s.get('preset', '?')} preset, {s.get('hours', '?')} h "
            f"budget, {len(run.curve.rows)} generations in {minutes:.1f} campaign minutes, commit "
            f"{str(git.get('commit', '?'))[:10]}, started {s.get('started', '?')}")


def _target_line(base: Run, run: Run) -> str:
    if not sizing_comparison(base, run):
        return (f"Both runs have the same sizes ({run.sizes()}): a comparison of their recipes, with no "
                "target. Per match: `no worse` when the run's score is at least the baseline's, `within "
                "interval` when lower but the run's 95% interval reaches the baseline's score, else `worse`. "
                "A difference inside both intervals is not evidence either way.")
    rule = ("Per match: `met` when the run's score is at least the baseline's, `within interval` when lower "
            "but the run's 95% interval reaches the baseline's score, else `not met`.")
    verdict_line = {True: "met", False: "not met", None: "not measured"}[target_met(base, run)]
    visits = run.summary.get("final_evaluation", {}).get("visits", "?")
    games = run.summary.get("final_evaluation", {}).get("games_per_match", "?")
    return (f"**Target** (issue 11): the run's final searched scores ({visits} visits, {games} games) against "
            f"{' and '.join(TARGET_OPPONENTS)} at least the baseline's: **{verdict_line}**. {rule}")


def _saved(value: dict[str, Any] | None, missing: str = "-") -> str:
    return missing if value is None else str(value.get("describe", "?"))


def rating_rows(base: Run, run: Run) -> list[str]:
    """Per mode: each run's final joint rating, its control's and the gain."""
    lines = ["| mode | run | final, joint rating | control, joint rating | final minus control |",
             "|---|---|---|---|---|"]
    for mode in ("searched", "policy"):
        for r in (base, run):
            lines.append(f"| {mode} | {r.name} | {_saved(joint_of(r.summary, FINAL, mode))} | "
                         f"{_saved(joint_of(r.summary, CONTROL, mode), 'not played')} | "
                         f"{_saved(gain_of(r.summary, mode), 'not measured')} |")
    return lines


def _host_line(base: Run, run: Run) -> str:
    """Whether the two runs' hosts were equally fast (benchmarks/host_speed.py), which a comparison at
    the same wall time assumes."""
    speeds = [host_speeds(r.summary) for r in (base, run)]
    if not all(speeds):
        missing = " and ".join(f"`{r.name}`" for r, h in zip((base, run), speeds, strict=True) if not h)
        return (f"Host speed: not probed for {missing} (runs before benchmarks/host_speed.py): check that both "
                "ran on hosts of the same speed before reading the wall-clock comparison.")
    a, b = (s[0] for s in speeds)
    perft, train = b.ratios(a)
    shown = f"perft {perft:.2f}x, training {train:.2f}x the baseline's host"
    if b.differs(a):
        return (f"**Host speed differs** ({shown}): at the same wall time the runs had different compute; "
                "compare them per generation, not by wall clock.")
    return f"Host speed: the same within {DRIFT:.0%} ({shown})."


def markdown(base: Run, run: Run) -> str:
    lines = [
        f"# `{run.name}` against the baseline `{base.name}` at the same wall time",
        "",
        f"Generated by `python reports/learning_compare.py` from both runs' `{CURVE}` and `{SUMMARY}`; "
        "do not edit.",
        "",
        _setup(base, "baseline"),
        _setup(run, "run"),
        "",
        _target_line(base, run),
        "",
        _host_line(base, run),
        "",
        "## Final evaluation",
        "",
        "Joint ratings (a bound `> x` / `< x` when every game was won or lost) and the gain over each "
        "run's own untrained control arm:",
        "",
        *rating_rows(base, run),
        "",
        "Scores of the final artifact against the rungs both runs played (`-`: not played by one):",
        "",
        *final_rows(base, run),
        "",
        *progressive_lines(run.curve, run.summary),
        "## During the campaigns",
        "",
        f"![comparison]({FIGURE})",
        "",
        "The campaigns' own ladder evaluations (their openings, cadence and visits) against wall minutes; "
        "vertical lines mark the run's candidate starts (dotted) and promotions (dash-dot).",
        "",
    ]
    return "\n".join(lines)


def _campaign_panel(ax: Any, base: Run, run: Run, mode: str) -> None:
    rungs = list(dict.fromkeys([*base.curve.rungs(mode), *run.curve.rungs(mode)]))
    cmap = plt.get_cmap("tab10")
    for i, rung in enumerate(rungs):
        for r, style, alpha in ((base, "--", 0.55), (run, "-", 1.0)):
            xs, ys = r.curve.points(M.score_key(mode, rung), WALL_MIN)
            if xs:
                ax.plot(xs, ys, style, marker=".", color=cmap(i % 10), alpha=alpha, label=f"{rung} ({r.name})")
    mark_events(ax, size_events(run.curve, run.summary), WALL_MIN)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("wall minutes")
    ax.set_ylabel("score")
    ax.set_title(f"Campaign evaluations, {mode} (dashed: baseline)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)


def _final_panel(ax: Any, base: Run, run: Run) -> None:
    keys = list(dict.fromkeys([*base.matches(), *run.matches()]))
    for j, (r, color) in enumerate(((base, "tab:grey"), (run, "tab:blue"))):
        for i, (opponent, mode) in enumerate(keys):
            m = final_match(r.summary, opponent, mode)
            if m is None:
                continue
            err = [[max(0.0, m["score"] - m["score_lo"])], [max(0.0, m["score_hi"] - m["score"])]]
            ax.bar(i + (j - 0.5) * 0.4, m["score"], 0.4, yerr=err, capsize=3, color=color,
                   hatch=None if mode == "searched" else "//", edgecolor="black", linewidth=0.5,
                   label=r.name if i == 0 else None)
    ax.set_xticks(range(len(keys)), [f"{o}\n{m}" for o, m in keys], fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95% interval)")
    ax.set_title("Final evaluation (hatched: policy only)", fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)


def draw(base: Run, run: Run, path: Path) -> Path:
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
    _campaign_panel(axes[0], base, run, "searched")
    _campaign_panel(axes[1], base, run, "policy")
    _final_panel(axes[2], base, run)
    fig.suptitle(f"{run.titled()} against {base.titled()}")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def _short(value: dict[str, Any] | None) -> str:
    """A saved rating or gain, without its rung list: ``612 [540, 690]`` / ``> 288``."""
    if value is None:
        return "-"
    if value.get("direction") == "?":
        return "undetermined"
    est, lo, hi = value.get("estimate"), value.get("lower"), value.get("upper")
    sign = "+" if "final" in value else ""  # a gain carries its arms
    if value.get("direction") in (">", "<"):
        return f"{value['direction']} {est:{sign}.0f}"
    return f"{est:{sign}.0f} [{lo:{sign}.0f}, {hi:{sign}.0f}]"


def _host(summary: dict[str, Any]) -> str:
    """The trainer's rate on the host before -> after the run (benchmarks/host_speed.py)."""
    speeds = host_speeds(summary)
    if speeds is None:
        return "not probed"
    before, after = speeds
    changed = " (changed)" if after.differs(before) else ""
    return f"{before.train_samples_per_s:.0f} -> {after.train_samples_per_s:.0f}{changed}"


def _budget(summary: dict[str, Any]) -> str:
    """``1.0 / 64``: the wall budget in hours and the campaign's own minutes (``-`` when not
    recorded); a run capped by ``--generations`` shows a budget it did not use."""
    wall = summary.get("wall") or {}
    seconds = wall.get("campaign_recorded_s")
    minutes = "-" if not isinstance(seconds, (int, float)) else f"{seconds / 60:.0f}"
    return f"{summary.get('hours', '?')} / {minutes}"


def ablation_table(runs: list[Run]) -> list[str]:
    """One row per run: its recipe diff from the cpu preset, budget, the host's speed, final and
    control joint ratings and the gains per mode, policy-only stalemates,
    5+ pawn leads won and mates in one taken (all rungs of the final arm's climb), and how often
    the final and control networks' top moves match the run's own targets' top moves."""
    lines = ["| run | recipe diff from cpu | hours: budget / campaign minutes | generations | host training samples/s | "
             "searched: final | searched: gain over control | "
             "policy: final | policy: gain over control | policy stalemates / games | policy leads won | "
             "policy mates in one taken | own targets' top move matched: final / control |",
             "|---|---|---:|---:|---|---|---|---|---|---:|---:|---:|---|"]
    for r in runs:
        diff = r.summary.get("recipe_diff")
        recipe = ("not recorded" if diff is None else
                  ", ".join(f"`{k}={v}`" for k, v in diff.items()) or "none (the cpu preset)")
        total = next((p for p in policy_report(r.summary) if p.opponent == "all"), None)
        stale = "-" if total is None else f"{total.stalemates} / {total.games}"
        leads = "-" if total is None or total.opportunities is None else f"{total.converted}/{total.opportunities}"
        cells = [r.name, recipe, _budget(r.summary), str(len(r.curve.rows)), _host(r.summary)]
        for mode in ("searched", "policy"):
            cells += [_short(joint_of(r.summary, FINAL, mode)), _short(gain_of(r.summary, mode))]
        mates = "-" if total is None else total.mates
        lines.append("| " + " | ".join([*cells, stale, leads, mates, _fit(r.summary)]) + " |")
    return lines


def _fit(summary: dict[str, Any]) -> str:
    """Share of the run's own sampled self-play positions where each arm's top move is the target's
    (``own_targets``, reports/mate_recall.py); ``-`` for a run from before it was measured."""
    fit = summary.get("own_targets")
    if not fit:
        return "-"
    shares = []
    for arm in ("final", "control"):
        a = fit.get(arm, {}).get("target_agreement", {})
        shares.append(f"{100 * a['agree'] / a['positions']:.0f}%" if a.get("positions") else "-")
    return " / ".join(shares)


def ablations_markdown(runs: list[Run]) -> str:
    return "\n".join([
        "# Learning benchmark runs compared",
        "",
        "Generated by `python reports/learning_compare.py --table` from each run's `summary.json`; do not "
        "edit. Ratings are joint ratings over the rungs each arm climbed (95% interval; `> x` / `< x` a "
        "bound); the gain is final minus the run's own untrained control, interval by bootstrap over both "
        "arms' opening pairs. The MLflow UI (`make mlflow-ui`, experiment `learning-benchmark`) holds the "
        "same numbers as metrics, with each run's recipe diff as `recipe.*` tags. Host training samples/s: "
        "the trainer's rate on the run's host, probed before the campaign and after the final evaluation "
        "(`benchmarks/host_speed.py`); runs whose hosts differ in speed compare per generation, not by wall "
        "clock.",
        "",
        *ablation_table(runs),
        "",
    ])


def compare(baseline: Path, folder: Path) -> tuple[Path, Path]:
    """Writes ``comparison.png`` and ``comparison.md`` into `folder`."""
    base, run = Run.load(baseline), Run.load(folder)
    figure = draw(base, run, folder / FIGURE)
    table = folder / TABLE
    table.write_text(markdown(base, run))
    return figure, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", type=Path, nargs="+", metavar="FOLDER",
                        help=f"runs' folders ({CURVE}, {SUMMARY}): the baseline, then the compared run "
                        "(its folder gets the outputs); with --table, any number of runs")
    parser.add_argument("--table", type=Path, default=None, metavar="OUT.md",
                        help="write one comparison table of every run given (ablations) to OUT.md instead")
    args = parser.parse_args(argv)
    if args.table is None and len(args.folders) != 2:
        parser.error("give the baseline's folder and the run's folder (or --table OUT.md with any number)")
    try:
        if args.table is not None:
            args.table.parent.mkdir(parents=True, exist_ok=True)
            args.table.write_text(ablations_markdown([Run.load(f) for f in args.folders]))
            print(f"wrote {args.table}")
            return 0
        figure, table = compare(*args.folders)
    except (OSError, ValueError, KeyError) as exc:
        print(f"learning_compare: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {figure} and {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
