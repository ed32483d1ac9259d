"""A failure study's report: numeric tables, figures and a finding, as markdown + JSON.

:class:`StudyReport` is what a study returns; :func:`write_report` writes
``<out>/<name>.md`` (title, finding, the paper's numbers, tables, figures,
how to regenerate) and ``<out>/<name>.json`` (the same content as data; the
index is generated from these). :func:`parse_tables` reads the markdown
tables back (the tests check they parse and hold finite numbers).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chesszero.fsio import atomic_write_text

__all__ = ["Table", "StudyReport", "parse_tables", "write_report", "fmt"]

Cell = str | float | int | None


def fmt(value: Cell) -> str:
    """A table cell: numbers to 4 significant digits, None as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}"
    return str(value)


@dataclass(frozen=True)
class Table:
    """A titled table; the first column labels the rows, the others hold numbers (or text)."""

    title: str
    columns: list[str]
    rows: list[list[Cell]]
    note: str = ""

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.title!r}: row {row} has {len(row)} cells, "
                                 f"expected {len(self.columns)}")

    def markdown(self) -> str:
        lines = [f"### {self.title}", ""]
        if self.note:
            lines += [self.note, ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "|".join("---" for _ in self.columns) + "|")
        lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"


@dataclass
class StudyReport:
    """Everything a study measured, ready to write."""

    name: str
    title: str
    paper: str  # the paper's section and its numbers, one paragraph
    finding: str  # one paragraph written from the measured numbers
    scale: str
    tables: list[Table] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # paths relative to the report's folder
    headline: dict[str, float] = field(default_factory=dict)  # the numbers the finding quotes
    mlflow: dict[str, str] = field(default_factory=dict)  # tracking uri and parent run id
    command: str = ""
    wall_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # named parts of the run -> seconds
    machine: dict[str, float] = field(default_factory=dict)  # cpus, own CPU seconds, load average at the end

    def timing(self) -> str:
        """Where the wall time went and how busy the machine was, in one sentence."""
        if not self.phases and not self.machine:
            return ""
        parts = [f"{label} {secs / 60:.1f} min" for label, secs in self.phases.items()]
        rest = self.wall_s - sum(self.phases.values())
        if self.phases and rest > 0:
            parts.append(f"the rest {rest / 60:.1f} min")
        text = "Time: " + ", ".join(parts) + "." if parts else ""
        m = self.machine
        if m.get("cpus") and self.wall_s > 0:
            own = m.get("own_cpu_s", 0.0) / self.wall_s
            text += (f" Machine: {int(m['cpus'])} CPUs; the study's own processes kept {own:.2f} of them busy on "
                     f"average; load average at the end {m.get('load_1min', 0.0):.2f} (1 min), "
                     f"{m.get('load_15min', 0.0):.2f} (15 min).")
        return text.strip()

    def markdown(self) -> str:
        timing = self.timing()
        parts = [f"# {self.title}", "",
                 f"Scale `{self.scale}`; wall time {self.wall_s / 60:.1f} min; regenerate with "
                 f"`{self.command}`." if self.command else f"Scale `{self.scale}`.", "",
                 *([timing, ""] if timing else []),
                 "## Finding", "", self.finding, "", "## The paper", "", self.paper, ""]
        if self.mlflow:
            parts += [f"MLflow: parent run `{self.mlflow.get('run_id', '')}` in `{self.mlflow.get('shown', self.mlflow.get('uri', ''))}`.", ""]
        parts += ["## Measurements", ""]
        parts += [t.markdown() for t in self.tables]
        for fig in self.figures:
            parts += [f"![{Path(fig).stem}]({fig})", ""]
        return "\n".join(parts)


def write_report(report: StudyReport, out_dir: Path) -> Path:
    """Writes ``<out_dir>/<name>.md`` and ``.json``; returns the markdown path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / f"{report.name}.md"
    atomic_write_text(md, report.markdown())
    atomic_write_text(out_dir / f"{report.name}.json", json.dumps(asdict(report), indent=2, default=str) + "\n")
    return md


def parse_tables(markdown: str) -> dict[str, list[dict[str, str]]]:
    """Markdown tables under ``### title`` headings -> {title: [{column: cell}]}."""
    tables: dict[str, list[dict[str, str]]] = {}
    title, header = "", None
    for line in markdown.splitlines():
        if line.startswith("### "):
            title, header = line[4:].strip(), None
            continue
        if not line.startswith("|"):
            header = None if not line.strip() else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            tables[title] = []
        elif set("".join(cells)) <= {"-"}:
            continue
        else:
            if len(cells) != len(header):
                raise ValueError(f"table {title!r}: row {line!r} has {len(cells)} cells, header {len(header)}")
            tables[title].append(dict(zip(header, cells, strict=True)))
    return tables


def load_summary(path: Path) -> dict[str, Any]:
    """A study's JSON summary as written by :func:`write_report`."""
    return json.loads(path.read_text())
