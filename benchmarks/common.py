"""Shared helpers for the benchmarks: timing, result tables with their targets, JSON output."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from targets import Target, Verdict, check


@dataclass
class Row:
    """One measured line: what, how fast, against which reference, and the target it must meet.

    ``ratio`` divides ``rate`` by another rate measured in the same run on
    this machine (``reference`` says which); a fixed number from elsewhere is
    a ``target`` (``targets.py``), never a ratio's denominator.
    """

    name: str
    rate: float
    unit: str
    reference: str = ""
    ratio: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    target: Target | None = None

    def verdict(self) -> Verdict:
        return check(self.target, rate=self.rate, unit=self.unit, ratio=self.ratio)

    def as_dict(self) -> dict[str, Any]:
        """The JSON row: the fields, the target as a dict (or None) and ``met`` (None: no target)."""
        verdict = self.verdict()
        return {"name": self.name, "rate": self.rate, "unit": self.unit, "reference": self.reference,
                "ratio": self.ratio, "extra": self.extra,
                "target": None if self.target is None else self.target.as_dict(), "met": verdict.met}


def best_rate(work: Callable[[], int], *, repeats: int = 3, min_seconds: float = 0.0) -> float:
    """Best units/second over `repeats` windows of `work` (which returns units done); a
    window repeats `work` until it has lasted `min_seconds`."""
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        units = work()
        elapsed = time.perf_counter() - start
        while elapsed < min_seconds:
            units += work()
            elapsed = time.perf_counter() - start
        best = max(best, units / elapsed)
    return best


def machine() -> dict[str, str | int]:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or "unknown",
        "cpus": os.cpu_count() or 0,
    }


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}" if abs(value) >= 0.1 else f"{value:.4g}"


def report(title: str, rows: Sequence[Row], out: Path | None, *, meta: Mapping[str, Any] | None = None) -> None:
    """Prints a rich table (with each row's target and verdict) and, when `out` is
    given, writes JSON: title, machine, the ``meta`` entries, and the rows."""
    table = Table(title=title)
    for col in ("benchmark", "rate", "unit", "reference", "ratio", "target", "met"):
        table.add_column(col, justify="right" if col in ("rate", "ratio") else "left")
    for r in rows:
        verdict = r.verdict()
        style = "" if verdict.met is None else "green" if verdict.met else "bold red"
        table.add_row(r.name, _number(r.rate), r.unit, r.reference,
                      "" if r.ratio is None else f"{r.ratio:,.2f}x",
                      "" if r.target is None else f"{r.target.describe()} ({r.target.cited})",
                      f"[{style}]{verdict.label}[/{style}]" if style else verdict.label)
    console = Console(width=None if sys.stdout.isatty() else 180)  # logs: no 80-column wrapping
    console.print(table)
    missed = [r for r in rows if r.verdict().met is False]
    if missed:
        console.print("[bold red]MISSED[/bold red]: " + "; ".join(
            f"{r.name} ({r.target.describe() if r.target else ''})" for r in missed))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"title": title, "machine": machine(), **(meta or {}),
                                   "rows": [r.as_dict() for r in rows]}, indent=2))
