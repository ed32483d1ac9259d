"""Figures and tables of a campaign, drawn from what MLflow recorded.

Run by `dvc repro` (stages `figures` and `tables` in dvc.yaml):

    python reports/draw.py --campaign cpu-main --tracking-uri sqlite:///mlruns/mlflow.db --out reports

Writes PNG figures under ``<out>/figures/``, markdown tables under
``<out>/tables/`` and an index ``<out>/index.md``. It draws the campaign
``--campaign`` names (dvc.yaml passes params.yaml's ``reports.figures_campaign``),
never "the most recent run": a short run started after a long campaign must
not silently replace the long campaign's figures. Ratings are the joint
rating (``elo_joint/<mode>``) with its interval band; a bound (every game
won or lost) is a triangle at the bound (``rating_plot``), never a point on
the line; the strength table gives the paper's nearest-rung number second.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rating_plot import plot_rating  # noqa: E402  (reports/rating_plot.py)

from chesszero.campaign import metrics as M  # noqa: E402
from chesszero.campaign.headline import (  # noqa: E402
    RatingSeries,
    key_family,
    rating_from,
    rating_series,
    steps_of,
)


@dataclass
class Campaign:
    """Metric histories of one campaign run, keyed by metric name."""

    name: str
    run_id: str
    params: dict[str, str]
    series: dict[str, dict[int, float]]

    def get(self, key: str) -> dict[int, float]:
        return self.series.get(key, {})

    def last(self, key: str, default: float = math.nan) -> float:
        s = self.get(key)
        return s[max(s)] if s else default


def load_campaign(tracking_uri: str, campaign: str) -> Campaign:
    """The MLflow run of the campaign named `campaign` (a campaign, resumed or
    not, is one run; should there be several, the latest). Other campaigns in
    the store, however recent, are never drawn instead."""
    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(M.EXPERIMENT)
    if exp is None:
        raise SystemExit(f"no '{M.EXPERIMENT}' experiment in {tracking_uri}: run a campaign first")
    query = f"tags.`{M.TAG_KIND}` = 'campaign'"
    runs = client.search_runs([exp.experiment_id], query + f" and tags.`{M.TAG_CAMPAIGN}` = '{campaign}'",
                              order_by=["attributes.start_time DESC"], max_results=1)
    if not runs:
        known = sorted({r.data.tags.get(M.TAG_CAMPAIGN, r.info.run_name)
                        for r in client.search_runs([exp.experiment_id], query)})
        raise SystemExit(f"no campaign run named {campaign!r} in {tracking_uri} (campaigns there: "
                         f"{', '.join(known) or 'none'}); name one with --campaign, or for `dvc repro "
                         "figures tables` set reports.figures_campaign in params.yaml")
    run = runs[0]
    series: dict[str, dict[int, float]] = {}
    for key in run.data.metrics:
        series[key] = {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)}
    return Campaign(run.data.tags.get(M.TAG_CAMPAIGN, run.info.run_name), run.info.run_id,
                    dict(run.data.params), series)


def _xy(series: dict[int, float], x: dict[int, float] | None = None) -> tuple[list[float], list[float]]:
    steps = sorted(s for s in series if x is None or s in x)
    return ([x[s] if x else s for s in steps], [series[s] for s in steps])


def _save(fig: Any, ax: Any, path: Path, title: str, xlabel: str, ylabel: str, *, legend_size: int) -> bool:
    """Titles, grid and legend on `ax`, then `fig` written to `path` (closed)."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _figure(path: Path, title: str, xlabel: str, curves: list[tuple[str, list[float], list[float]]],
            ylabel: str = "") -> bool:
    curves = [c for c in curves if c[1]]
    if not curves:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, xs, ys in curves:
        ax.plot(xs, ys, marker="o", markersize=3, label=label)
    return _save(fig, ax, path, title, xlabel, ylabel, legend_size=8)


def rating_curves(c: Campaign, x: dict[int, float] | None = None) -> dict[str, RatingSeries]:
    """Per mode, the headline (joint) rating series over the campaign, with x
    the generation or ``x[generation]`` (hours, optimizer steps): point
    estimates with their intervals, and bounds apart (``headline.rating_series``)."""
    out = {}
    for mode in M.EVAL_MODES:
        key = partial(M.joint_elo_key, mode)
        out[mode] = rating_series(steps_of(c.series, key_family(key), x), key)
    return out


def _rating_figure(path: Path, title: str, xlabel: str, series: dict[str, RatingSeries]) -> bool:
    """The joint rating per mode with its 95% band; bounds as triangles."""
    if not any(series.values()):
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for mode, s in series.items():
        plot_rating(ax, s, label=f"{mode}, joint rating")
    return _save(fig, ax, path, title, xlabel, "Elo (ladder), 95% interval", legend_size=7)


def draw_figures(c: Campaign, out: Path) -> list[str]:
    figs = out / "figures"
    made: list[str] = []
    hours = {k: v / 3600 for k, v in c.get(M.WALL_S).items()}
    steps = c.get(M.TRAIN_STEP)
    plots = [
        ("elo_vs_time.png", "Joint rating vs wall time (triangles: bounds)", "hours", rating_curves(c, hours)),
        ("elo_vs_steps.png", "Joint rating vs optimizer steps (triangles: bounds)", "optimizer steps",
         rating_curves(c, steps)),
    ]
    for name, title, xlabel, series in plots:
        if _rating_figure(figs / name, title, xlabel, series):
            made.append(name)
    simple = [
        ("losses.png", "Training losses per head", [(h, _xy(c.get(M.loss_key(h)))) for h in M.TRAIN_LOSS_HEADS]
         + [("total", _xy(c.get(M.TRAIN_LOSS)))]),
        ("lr_gradnorm.png", "Learning rate and gradient norm",
         [("lr", _xy(c.get(M.TRAIN_LR))), ("grad norm (pre-clip)", _xy(c.get(M.TRAIN_GRAD_NORM)))]),
        ("throughput.png", "Throughput", [("self-play searches/s", _xy(c.get(M.SELFPLAY_SEARCHES_S))),
                                          ("searches/s during training", _xy(c.get(M.SELFPLAY_SEARCHES_S_OVERLAP))),
                                          ("trainer samples/s", _xy(c.get(M.TRAIN_SAMPLES_S)))]),
        ("replay.png", "Replay occupancy and sampled-row age",
         [("occupancy (fraction)", _xy(c.get(M.REPLAY_OCCUPANCY))),
          ("mean sampled-row age (generations)", _xy(c.get(M.REPLAY_SAMPLE_AGE)))]),
        ("resignation.png", "Resignation threshold and false-resignation bound",
         [("threshold", _xy(c.get(M.RESIGN_THRESHOLD))), ("95% upper bound", _xy(c.get(M.RESIGN_FALSE_UPPER)))]),
    ]
    for name, title, pairs in simple:
        if _figure(figs / name, title, "generation", [(label, xs, ys) for label, (xs, ys) in pairs]):
            made.append(name)
    for mode in M.EVAL_MODES:
        name = f"ladder_{mode}.png"
        rungs = sorted({k.split("/")[-1] for k in c.series if k.startswith(f"score/{mode}/")})
        if _figure(figs / name, f"Ladder scores ({mode})", "generation",
                   [(f"vs {r}", *_xy(c.get(M.score_key(mode, r)))) for r in rungs], "score"):
            made.append(name)
        name = f"material_{mode}.png"
        if _figure(figs / name, f"Material balance where ladder games ended ({mode}, model's view)",
                   "generation", [(f"vs {r}", *_xy(c.get(M.material_key(mode, r)))) for r in rungs], "pawns"):
            made.append(name)
    if draw_terminations(c, figs / "terminations.png"):
        made.append("terminations.png")
    return made


def draw_terminations(c: Campaign, path: Path) -> bool:
    gens = sorted({g for t in M.TERMINATIONS for g in c.get(M.termination_key(t))})
    if not gens:
        return False
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    bottom = [0.0] * len(gens)
    for t in M.TERMINATIONS:
        vals = [c.get(M.termination_key(t)).get(g, 0.0) for g in gens]
        ax.bar(gens, vals, bottom=bottom, label=t)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_title("Self-play terminations per generation (draw-cycle diagnosis)")
    ax.set_ylabel("games")
    ax.legend(fontsize=7, ncol=2)
    xs, ys = _xy(c.get(M.NON_DECISIVE))
    ax2.plot(xs, ys, marker="o", color="black")
    ax2.set_ylabel("non-decisive rate")
    ax2.set_xlabel("generation")
    ax2.set_ylim(0, 1)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _fmt(v: float, digits: int = 0) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.{digits}f}"


def _last_rating(c: Campaign, key: Callable[[str], str]) -> str:
    """The rating logged last under `key` (joint or nearest-rung family), or '-'."""
    steps = c.get(key(""))
    if not steps:
        return "-"
    step = max(steps)
    rating = rating_from({k: c.get(k)[step] for k in key_family(key) if step in c.get(k)}, key)
    return "-" if rating is None else rating.describe()


def strength_table(c: Campaign) -> str:
    """Table 1 style: rating of the final model at several search budgets:
    the joint rating (or its bound) first, the paper's nearest-rung number after."""
    budgets = sorted({int(k.split("/")[1].split("_")[0]) for k in c.series if k.startswith("budget/")})
    anchor = c.params.get("ladder.anchor", "see ladder table")
    lines = [f"# Strength vs search budget ({c.name})", "",
             f"Ladder anchor: {anchor}. Joint rating: maximum likelihood over every rung played, 95% "
             "bootstrap interval over opening pairs, or a one-sided bound (`> x`: every game won, `< x`: "
             "every game lost). Nearest rung: the paper's rating from the rung nearest a 0.5 score "
             "(a bound when that rung was swept).", "",
             "| visits per move | joint rating [95%] | nearest rung (the paper's number) |", "|---:|---:|---:|"]
    for b in budgets:
        label = "policy only" if b == 0 else str(b)
        lines.append(f"| {label} | {_last_rating(c, partial(M.budget_joint_key, b))} | "
                     f"{_last_rating(c, partial(M.budget_key, b))} |")
    if not budgets:
        lines.append("| (no budget sweep recorded yet) | - | - |")
    return "\n".join(lines) + "\n"


def volume_table(c: Campaign) -> str:
    """Table 4 style: how much training the campaign did."""
    gens = c.get(M.GENERATION)
    positions = c.last(M.SELFPLAY_POSITIONS_TOTAL)
    samples = c.last(M.TRAIN_SAMPLES)
    rows = [
        ("generations completed", _fmt(len(gens))),
        ("optimizer steps", _fmt(c.last(M.TRAIN_STEP))),
        ("training samples", _fmt(samples)),
        ("self-play games", _fmt(c.last(M.SELFPLAY_GAMES_TOTAL))),
        ("self-play positions (searched)", _fmt(positions)),
        ("replay rows admitted", _fmt(c.last(M.REPLAY_ADMITTED_TOTAL))),
        ("samples per admitted position", _fmt(samples / positions if positions else math.nan, 2)),
        ("wall-clock hours", _fmt(c.last(M.WALL_S) / 3600, 2)),
        ("network", c.params.get("model.size", "?")),
        ("preset", c.params.get("preset", "?")),
    ]
    lines = [f"# Training volume ({c.name})", "", "| quantity | value |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def termination_table(c: Campaign) -> str:
    gens = sorted({g for t in M.TERMINATIONS for g in c.get(M.termination_key(t))})
    head = "| generation | " + " | ".join(M.TERMINATIONS) + " | non-decisive |"
    lines = [f"# Self-play terminations ({c.name})", "", head, "|" + "---:|" * (len(M.TERMINATIONS) + 2)]
    for g in gens:
        vals = [_fmt(c.get(M.termination_key(t)).get(g, 0.0)) for t in M.TERMINATIONS]
        lines.append(f"| {g} | " + " | ".join(vals) + f" | {_fmt(c.get(M.NON_DECISIVE).get(g, math.nan), 2)} |")
    return "\n".join(lines) + "\n"


def write_tables(c: Campaign, out: Path) -> list[str]:
    tables = out / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    made = []
    for name, text in (("strength_vs_budget.md", strength_table(c)), ("training_volume.md", volume_table(c)),
                       ("terminations.md", termination_table(c))):
        (tables / name).write_text(text)
        made.append(name)
    return made


def write_index(c: Campaign, out: Path, figures: list[str], tables: list[str]) -> None:
    lines = [f"# chesszero reports: campaign `{c.name}`", "",
             f"MLflow run `{c.run_id}`; generated by `dvc repro` from the MLflow store.", "", "## Tables", ""]
    lines += [f"- [{t}](tables/{t})" for t in tables]
    lines += ["", "## Figures", ""]
    lines += [f"![{f}](figures/{f})" for f in figures]
    (out / "index.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tracking-uri", default="sqlite:///mlruns/mlflow.db")
    parser.add_argument("--campaign", required=True,
                        help="the campaign to draw (params.yaml: reports.figures_campaign; `make run` names it <preset>-main)")
    parser.add_argument("--out", type=Path, default=Path("reports"))
    parser.add_argument("--only", choices=("figures", "tables", "all"), default="all")
    args = parser.parse_args()
    c = load_campaign(args.tracking_uri, args.campaign)
    figures = draw_figures(c, args.out) if args.only in ("figures", "all") else []
    tables = write_tables(c, args.out) if args.only in ("tables", "all") else []
    if args.only != "figures":
        if not figures:
            figures = sorted(p.name for p in (args.out / "figures").glob("*.png"))
        write_index(c, args.out, figures, tables)
    print(f"campaign {c.name}: {len(figures)} figures, {len(tables)} tables under {args.out}")


if __name__ == "__main__":
    main()
