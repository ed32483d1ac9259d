"""The headline rating a user sees (issue 22): the joint rating with its
interval or its bound, never a saturated nearest rung's point: in the
campaign's per-generation table, in the figures' plotted series
(`reports/draw.py`, `reports/learning.py`) and in the strength table."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from rich.console import Console

from chesszero.campaign import headline
from chesszero.campaign import metrics as M
from chesszero.campaign.eval_stage import joint_metrics, nearest_metrics
from chesszero.campaign.progress import summary_table
from chesszero.evaluate.elo import rate
from chesszero.evaluate.joint_rating import RungGames, joint_rating

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "reports"))

RUNGS = {"random": -412.0, "greedy-r50": 59.0, "greedy": 288.0}
SWEPT = (0, 0, 0, 0, 10)  # 20 games, all won
PLAYED = (1, 2, 3, 2, 2)


def evaluation(mode: str, pentanomials: dict[str, tuple[int, int, int, int, int]]) -> dict[str, float]:
    """One mode's rating metrics exactly as ``evaluate_generation`` logs them
    (nearest rung: the first rung, as ``choose_rung`` picks on ties)."""
    joint = joint_rating([RungGames(n, RUNGS[n], p) for n, p in pentanomials.items()], resamples=500)
    first = next(iter(pentanomials))
    nearest = rate(pentanomials[first], RUNGS[first], resamples=500)
    return {**joint_metrics(M.joint_elo_key, mode, joint), **nearest_metrics(M.elo_key, mode, nearest)}


def rendered(metrics: dict[str, float]) -> dict[str, str]:
    """The table as printed, label -> value."""
    console = Console(record=True, width=140)
    console.print(summary_table(7, metrics))
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in console.export_text().splitlines()]
    return {row[0]: row[1] for row in cells if len(row) == 2}


def test_a_saturated_evaluation_shows_the_bound_not_the_nearest_rung_point() -> None:
    m = evaluation("searched", dict.fromkeys(RUNGS, SWEPT))
    joint = headline.joint_rating(m, "searched")
    nearest = headline.nearest_rating(m, "searched")
    assert joint is not None and joint.direction == ">" and nearest is not None and nearest.direction == ">"
    assert m[M.elo_key("searched", "bound")] == 1.0  # signed, as for the joint rating
    table = rendered(m)
    assert table["rating (searched): joint over rungs, 95%"] == f"> {joint.estimate:.0f}"
    assert table["nearest rung (the paper's number)"] == f"> {nearest.estimate:.0f}"
    # the saturated nearest rung's number never appears as a point
    assert f"{nearest.estimate:.0f}" not in table.values() and not any(k.startswith("Elo") for k in table)


def test_an_evaluation_with_a_point_estimate_shows_its_interval() -> None:
    m = evaluation("policy", {"random": PLAYED, "greedy": (4, 3, 2, 1, 0)})
    joint = headline.joint_rating(m, "policy")
    assert joint is not None and not joint.is_bound
    assert rendered(m)["rating (policy): joint over rungs, 95%"] == \
        f"{joint.estimate:.0f} [{joint.lower:.0f}, {joint.upper:.0f}]"


def test_ratings_read_from_metrics() -> None:
    key = lambda s: M.joint_elo_key("searched", s)  # noqa: E731
    assert headline.rating_from({}, key) is None
    lost = headline.rating_from({key(""): -100.0, key("hi"): -100.0, key("bound"): -1.0}, key)
    assert lost == headline.Rating(-100.0, -math.inf, -100.0, "<") and lost.describe() == "< -100"
    won = headline.rating_from({key(""): 288.4, key("lo"): 288.4, key("bound"): 1.0}, key)
    assert won is not None and won.describe() == "> 288"
    point = headline.rating_from({key(""): 612.0, key("lo"): 540.2, key("hi"): 690.0, key("bound"): 0.0}, key)
    assert point is not None and point.describe() == "612 [540, 690]"


def histories() -> dict[str, dict[int, float]]:
    """Three evaluated generations: a point, a sweep (a bound), a point; generation 1 not evaluated."""
    s: dict[str, dict[int, float]] = {M.WALL_S: {g: 1800.0 * (g + 1) for g in range(4)}}
    for g, pentas in ((0, {"random": PLAYED}), (2, dict.fromkeys(RUNGS, SWEPT)),
                      (3, {"greedy": PLAYED, "greedy-r50": (0, 1, 2, 3, 4)})):
        for k, v in evaluation("searched", pentas).items():
            s.setdefault(k, {})[g] = v
    return s


def test_the_campaign_figure_plots_bounds_apart_from_the_line() -> None:
    import draw

    s = histories()
    c = draw.Campaign("unit", "run", {}, s)
    series = draw.rating_curves(c, {g: v / 3600 for g, v in s[M.WALL_S].items()})
    searched = series["searched"]
    assert [x for x, *_ in searched.points] == [0.5, 2.0]  # hours of the two point estimates
    assert searched.lower_bounds == [(1.5, s[M.joint_elo_key("searched")][2])] and searched.upper_bounds == []
    for _, est, lo, hi in searched.points:
        assert lo < est < hi
    assert not series["policy"]  # never evaluated
    assert all(x != 1.5 for x in searched.columns()[0])  # the sweep is no point on the line


def test_the_strength_table_gives_the_joint_bound_first(tmp_path: Path) -> None:
    import draw

    swept = evaluation("x", dict.fromkeys(RUNGS, SWEPT))
    s = {M.budget_joint_key(64, suffix): {5: swept[M.joint_elo_key("x", suffix)]} for suffix in ("", "lo", "bound")}
    s |= {M.budget_key(64, suffix): {5: swept[M.elo_key("x", suffix)]} for suffix in ("", "lo", "hi", "bound")}
    table = draw.strength_table(draw.Campaign("unit", "run", {}, s))
    joint, nearest = swept[M.joint_elo_key("x")], swept[M.elo_key("x")]
    assert f"| 64 | > {joint:.0f} | > {nearest:.0f} |" in table
    draw.draw_figures(draw.Campaign("unit", "run", {}, histories()), tmp_path)
    assert (tmp_path / "figures" / "elo_vs_time.png").read_bytes().startswith(b"\x89PNG")


def test_the_learning_figure_reads_the_same_series_from_a_saved_curve() -> None:
    from learning_curve import curve_from_series
    from learning_summary import rating_curves

    s = histories()
    s[M.GENERATION] = {g: float(g) for g in range(4)}
    series = rating_curves(curve_from_series(s))["searched"]
    assert [x for x, *_ in series.points] == [30.0, 120.0]  # wall minutes
    assert [x for x, _ in series.lower_bounds] == [90.0]


@pytest.mark.parametrize("direction", [">", "<"])
def test_bound_markers_are_drawn_off_the_line(direction: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rating_plot import LOWER_MARKER, UPPER_MARKER, plot_rating

    series = headline.RatingSeries(points=[(0.0, 10.0, 0.0, 20.0), (2.0, 30.0, 20.0, 40.0)])
    (series.lower_bounds if direction == ">" else series.upper_bounds).append((1.0, 50.0))
    fig, ax = plt.subplots()
    assert plot_rating(ax, series, label="searched")
    line, marks = ax.get_lines()
    assert list(line.get_xdata()) == [0.0, 2.0] and line.get_linestyle() == "-"
    assert marks.get_linestyle() == "None" and list(marks.get_xdata()) == [1.0]
    assert marks.get_marker() == (LOWER_MARKER if direction == ">" else UPPER_MARKER)
    plt.close(fig)
