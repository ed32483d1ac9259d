"""Shared helpers for the benchmarks: timing, result tables, JSON output."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table


@dataclass
class Row:
    """One measured line: what, how fast, and against which reference."""

    name: str
    rate: float
    unit: str
    reference: str = ""
    ratio: float | None = None
    extra: dict[str, float | int | str] = field(default_factory=dict)


def best_rate(work: Callable[[], int], *, repeats: int = 3, min_seconds: float = 0.0) -> float:
    """Best units/second over `repeats` runs of `work` (which returns units done)."""
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


def report(title: str, rows: list[Row], out: Path | None) -> None:
    """Prints a rich table and, when `out` is given, writes JSON."""
    table = Table(title=title)
    for col in ("benchmark", "rate", "unit", "reference", "ratio"):
        table.add_column(col, justify="right" if col in ("rate", "ratio") else "left")
    for r in rows:
        table.add_row(r.name, f"{r.rate:,.0f}", r.unit, r.reference,
                      "" if r.ratio is None else f"{r.ratio:,.2f}x")
    Console().print(table)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"title": title, "machine": machine(),
                                   "rows": [asdict(r) for r in rows]}, indent=2))
