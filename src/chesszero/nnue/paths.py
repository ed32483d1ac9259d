"""Where NNUE students live: ``runs/nnue/<name>/student.nnue`` under a project root.

``latest_student(root)`` is the default network of the tools that search with
a student (``chesszero uci --engine alphabeta``, ladder players, the next
build's search games): the newest ``student.nnue`` by modification time; on a
fresh clone, without builds of its own, the retained student in git (the
``nnue-student`` DVC stage's report, ``reports/nnue/<teacher>-student/``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["STUDENT_FILE", "latest_student", "nnue_root", "retained_students", "student_path"]

STUDENT_FILE = "student.nnue"


def nnue_root(root: Path) -> Path:
    """``<root>/runs/nnue``: one folder per build."""
    return Path(root) / "runs" / "nnue"


def student_path(root: Path, name: str) -> Path:
    """The student file of build ``name``."""
    return nnue_root(root) / name / STUDENT_FILE


def latest_student(root: Path, *, exclude: str | None = None) -> Path | None:
    """The newest ``runs/nnue/*/student.nnue`` of ``root`` by mtime (ties: by path), or None;
    ``exclude`` names a build to pass over (a build's own earlier student)."""
    found = [p for p in nnue_root(root).glob(f"*/{STUDENT_FILE}") if p.is_file() and p.parent.name != exclude]
    if not found:
        found = retained_students(root)
    if not found:
        return None
    return max(found, key=lambda p: (p.stat().st_mtime_ns, str(p)))


def retained_students(root: Path) -> list[Path]:
    """The students kept in git: ``reports/nnue/*-student/student.nnue``."""
    return [p for p in (Path(root) / "reports" / "nnue").glob(f"*-student/{STUDENT_FILE}") if p.is_file()]
