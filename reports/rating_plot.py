"""Drawing a rating series (``chesszero.campaign.headline.RatingSeries``) on matplotlib axes.

Point estimates are joined by a line with their 95% interval as a band;
bounds are not points on that line: a lower bound (every game won) is an
upward triangle at the bound, an upper bound (every game lost) a downward
one, in the series' colour and unjoined. Shared by ``draw.py`` (the
campaign's figures) and ``learning.py`` (the learning benchmark's figure).
"""

from __future__ import annotations

from typing import Any

from chesszero.campaign.headline import RatingSeries

LOWER_MARKER = "^"
UPPER_MARKER = "v"


def plot_rating(ax: Any, series: RatingSeries, *, label: str, color: Any = None, linestyle: str = "-") -> bool:
    """Draws `series` on `ax`; returns False when it holds nothing."""
    if not series:
        return False
    xs, ys, lo, hi = series.columns()
    if xs:
        (line,) = ax.plot(xs, ys, linestyle, marker="o", markersize=3, color=color, label=label)
        color = line.get_color()
        ax.fill_between(xs, lo, hi, color=color, alpha=0.18, linewidth=0)
    for bounds, marker, words in ((series.lower_bounds, LOWER_MARKER, "lower bound: all won"),
                                  (series.upper_bounds, UPPER_MARKER, "upper bound: all lost")):
        if bounds:
            bx, by = zip(*bounds, strict=True)
            drawn = ax.plot(bx, by, linestyle="none", marker=marker, markersize=8, color=color,
                            label=f"{label}, {words}")
            color = drawn[0].get_color()
    return True


__all__ = ["LOWER_MARKER", "UPPER_MARKER", "plot_rating"]
