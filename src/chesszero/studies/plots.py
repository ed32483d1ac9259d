"""The studies' figures (matplotlib, Agg): lines over generations and grouped bars."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["bar_figure", "line_figure"]


def _pyplot():  # -> matplotlib.pyplot
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def line_figure(path: Path, x: Sequence[float], series: Mapping[str, Sequence[float | None]], *,
                title: str, xlabel: str, ylabel: str, log_y: bool = False,
                references: Mapping[str, float] | None = None,
                styles: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """One line per series (None points skipped; ``styles[label]``: extra
    matplotlib line settings), dashed horizontal reference lines."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, ys in series.items():
        pts = [(a, b) for a, b in zip(x, ys, strict=True) if b is not None]
        if pts:
            style = {"marker": "o", **(styles or {}).get(label, {})}
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **style)
    for label, y in (references or {}).items():
        ax.axhline(y, linestyle="--", linewidth=1, color="grey")
        ax.annotate(label, (ax.get_xlim()[0], y), fontsize=8, color="grey", va="bottom")
    if log_y:
        ax.set_yscale("log")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return _save(plt, fig, ax, path)


def bar_figure(path: Path, groups: Sequence[str], series: Mapping[str, Sequence[float]], *,
               title: str, ylabel: str, references: Mapping[str, float] | None = None) -> Path:
    """Grouped bars: one group per entry of ``groups``, one bar per series."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        ax.bar([g + i * width for g in range(len(groups))], values, width=width, label=label)
    for label, y in (references or {}).items():
        ax.axhline(y, linestyle="--", linewidth=1, color="grey")
        ax.annotate(label, (-0.4, y), fontsize=8, color="grey", va="bottom")
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))], list(groups), fontsize=8)
    ax.set(title=title, ylabel=ylabel)
    return _save(plt, fig, ax, path)


def _save(plt: object, fig: object, ax: object, path: Path) -> Path:
    ax.legend(fontsize=8)  # type: ignore[attr-defined]
    fig.tight_layout()  # type: ignore[attr-defined]
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[attr-defined]
    return path
