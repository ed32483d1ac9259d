"""Figure and table of a learning benchmark run, from its saved curve.

Reads ``<folder>/curve.csv`` (``learning_curve``) and ``<folder>/summary.json``
(written by ``benchmarks/bench_learning.py``; read through
``learning_summary``) and writes:

- ``learning.png``: the campaign's joint rating (searched and policy only)
  against wall minutes with 95% interval bands, bounds as triangles, the
  control arm's final rating as a horizontal line per mode and the final
  arm's at the end; ladder scores per rung and mode against generation;
  self-play termination shares per generation (stacked); the non-decisive
  rate with any recorded conversion rates; the value and policy losses; and
  the final evaluation's climbs (score per rung, both arms and modes);
- ``learning.md`` (``learning_table``): the run, the headline ratings with
  final minus control, every match, policy-only stalemates and conversion,
  issue 22's targets, and the curve per generation.

Run by ``dvc repro learning-figure`` (dvc.yaml) or by hand::

    python reports/learning.py reports/learning/<campaign>
"""

from __future__ import annotations

import argparse
import math
import sys
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
    termination_shares,
)
from learning_summary import (  # noqa: E402
    CONTROL,
    CURVE,
    FINAL,
    SUMMARY,
    SizeEvent,
    arm_matches,
    arms,
    joint_of,
    load_run,
    rating_curves,
    rating_of,
    size_events,
)
from learning_table import markdown, rung_order  # noqa: E402
from rating_plot import plot_rating  # noqa: E402

from chesszero.campaign import metrics as M  # noqa: E402
from chesszero.campaign.headline import RatingSeries  # noqa: E402

FIGURE = "learning.png"
TABLE = "learning.md"
MODE_STYLE = {"searched": "-", "policy": "--"}
MODE_COLOR = {"searched": "tab:blue", "policy": "tab:orange"}


def mark_events(ax: Any, events: list[SizeEvent], x: str) -> None:
    """Vertical lines at the size events (x: ``GENERATION`` or ``WALL_MIN``)."""
    for e in events:
        at = e.generation if x == GENERATION else e.wall_min
        if math.isnan(at):
            continue
        style = {"color": "tab:green", "ls": ":"} if e.kind == "candidate" else {"color": "tab:red", "ls": "-."}
        ax.axvline(at, lw=1.2, alpha=0.8, label=e.label(), **style)


def _single(rating: Any, x: float) -> RatingSeries:
    """One saved rating at `x` as a series (a point with its interval, or a bound)."""
    out = RatingSeries()
    if rating is None or math.isnan(x):
        return out
    if rating.direction == ">":
        out.lower_bounds.append((x, rating.estimate))
    elif rating.direction == "<":
        out.upper_bounds.append((x, rating.estimate))
    else:
        out.points.append((x, rating.estimate, rating.lower, rating.upper))
    return out


def _rating_panel(ax: Any, curve: Curve, summary: dict[str, Any]) -> None:
    """Joint rating against wall minutes, the control per mode as a line."""
    drew = False
    end = max((row[WALL_MIN] for row in curve.rows if not math.isnan(row[WALL_MIN])), default=math.nan)
    for mode, series in rating_curves(curve).items():
        color = MODE_COLOR[mode]
        drew |= plot_rating(ax, series, label=f"{mode} (campaign)", color=color, linestyle=MODE_STYLE[mode])
        final = rating_of(joint_of(summary, FINAL, mode))
        drew |= plot_rating(ax, _single(final, end), label=f"{mode}, final evaluation", color=color,
                            linestyle="none")
        control = rating_of(joint_of(summary, CONTROL, mode))
        if control is not None:
            ax.axhline(control.estimate, color=color, ls=":", lw=1.5,
                       label=f"control (untrained), {mode}: {control.describe()}")
            if not control.is_bound:
                ax.axhspan(control.lower, control.upper, color=color, alpha=0.07)
            drew = True
    ax.set_xlabel("wall minutes")
    ax.set_ylabel("joint rating (Elo, 95% interval)")
    ax.grid(alpha=0.3)
    if drew:
        ax.legend(fontsize=6)
    else:
        ax.text(0.5, 0.5, "no joint rating recorded", ha="center", transform=ax.transAxes)


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


def _climb_panel(ax: Any, summary: dict[str, Any]) -> None:
    """The final evaluation's climbs: score per rung, per arm and mode."""
    order = rung_order(None, summary)
    drew = False
    for arm in arms(summary):
        for mode in ("searched", "policy"):
            played = arm_matches(summary, arm, mode)
            if not played:
                continue
            xs = [order.index(m["opponent"]) for m in played]
            ys = [m["score"] for m in played]
            err = [[max(0.0, m["score"] - m["score_lo"]) for m in played],  # rounding can cross by 1e-16
                   [max(0.0, m["score_hi"] - m["score"]) for m in played]]
            ax.errorbar(xs, ys, yerr=err, fmt=MODE_STYLE[mode], marker="o" if arm == FINAL else "s", capsize=3,
                        color=MODE_COLOR[mode], alpha=1.0 if arm == FINAL else 0.45, label=f"{arm}, {mode}")
            drew = True
    climb = summary.get("final_evaluation", {}).get("climb")
    if climb:
        ax.axhline(climb["below"], color="grey", ls=":", lw=1, label=f"stop: {climb['consecutive']} below this")
    ax.set_xticks(range(len(order)), order, rotation=30, fontsize=7)
    ax.set_ylim(-0.02, 1.05)
    ax.set_ylabel("score (95% interval)")
    final = summary.get("final_evaluation", {})
    ax.set_title(f"Final evaluation climbs, {final.get('games_per_match', '?')} games per rung "
                 f"(searched: {final.get('visits', '?')} visits)", fontsize=10)
    ax.grid(alpha=0.3)
    if drew:
        ax.legend(fontsize=7)


def draw_figure(curve: Curve, summary: dict[str, Any], path: Path) -> Path:
    colors = _rung_colors(rung_order(curve, summary))
    events = size_events(curve, summary)
    fig, axes = plt.subplots(3, 2, figsize=(13, 13))
    mark_events(axes[0][0], events, WALL_MIN)
    _rating_panel(axes[0][0], curve, summary)
    axes[0][0].set_title("Joint rating against wall time (triangles: bounds; dotted: control arm)", fontsize=10)
    mark_events(axes[0][1], events, GENERATION)
    _ladder_panel(axes[0][1], curve, GENERATION, "generation", colors)
    axes[0][1].set_title("Ladder scores during the campaign (solid searched, dashed policy)", fontsize=10)
    _terminations_panel(axes[1][0], curve)
    _rates_panel(axes[1][1], curve, colors)
    mark_events(axes[2][0], events, GENERATION)
    _loss_panel(axes[2][0], curve)
    _climb_panel(axes[2][1], summary)
    fig.suptitle(f"Learning benchmark {summary.get('campaign', '?')}: {summary.get('preset', '?')} preset, "
                 f"{len(curve.rows)} generations, {summary.get('hours', '?')} h budget")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def redraw(folder: Path) -> tuple[Path, Path]:
    """Writes ``learning.png`` and ``learning.md`` from the folder's curve and summary."""
    curve, summary = load_run(folder)
    figure = draw_figure(curve, summary, folder / FIGURE)
    table = folder / TABLE
    table.write_text(markdown(curve, summary, FIGURE))
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
