"""The phase log: when each stage of a campaign started and ended.

``runs/<campaign>/phases.jsonl`` gets one JSON line when a stage starts and
one when it ends (``{"t", "pid", "generation", "stage", "event"}``, event
``start`` or ``end``), appended with one ``write`` each. A start with no end
from the same process is where that process stopped (a crash, Ctrl-C or
kill -9); ``chesszero campaign status`` users and the kill test read it to see
where a campaign was. A line cut by a kill is skipped when reading.

:func:`stage_times` sums the finished spans per stage: where a campaign's
wall time went (``chesszero campaign status``, the learning benchmark's
report). A span inside another of the same process (the replay snapshot
inside materialisation) is counted as its own stage but not again in the
total.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PhaseEvent:
    """One line of the phase log."""

    t: float
    pid: int
    generation: int
    stage: str
    event: str  # "start" or "end"


def append(path: Path, generation: int, stage: str, event: str) -> None:
    line = json.dumps({"t": time.time(), "pid": os.getpid(), "generation": generation, "stage": stage,
                       "event": event}) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@contextmanager
def span(path: Path, generation: int, stage: str) -> Iterator[None]:
    """Logs the start of `stage`, and its end when the body returns normally."""
    append(path, generation, stage, "start")
    yield
    append(path, generation, stage, "end")


def read(path: Path) -> list[PhaseEvent]:
    """The events logged so far (none when there is no log)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(PhaseEvent(**json.loads(line)))
        except (ValueError, TypeError):  # a line cut by a kill
            continue
    return out


@dataclass(frozen=True)
class StageTime:
    """The finished spans of one stage: count, seconds in all, and the share
    of the campaign's total (top-level spans only; None for a nested stage)."""

    stage: str
    spans: int
    seconds: float
    share: float | None
    nested: bool

    def to_dict(self) -> dict[str, object]:
        return {"stage": self.stage, "spans": self.spans, "seconds": round(self.seconds, 3),
                "share": None if self.share is None else round(self.share, 4), "nested": self.nested}


def stage_times(events: list[PhaseEvent], *, since_generation: int = 0) -> list[StageTime]:
    """Per stage, the finished spans of generations >= `since_generation`, in
    the order stages first started. Unfinished spans (a stopped process) are
    left out; a stage whose every span lay inside another span is `nested`."""
    open_: dict[tuple[int, int, str], list[tuple[float, int]]] = {}
    depth: dict[int, int] = {}
    seconds: dict[str, float] = {}
    spans: dict[str, int] = {}
    outer: dict[str, bool] = {}
    order: dict[str, int] = {}
    for e in events:
        key = (e.pid, e.generation, e.stage)
        if e.event == "start":
            order.setdefault(e.stage, len(order))
            open_.setdefault(key, []).append((e.t, depth.get(e.pid, 0)))
            depth[e.pid] = depth.get(e.pid, 0) + 1
            continue
        if not open_.get(key):
            continue
        began, level = open_[key].pop()
        depth[e.pid] = level
        if e.generation < since_generation:
            continue
        seconds[e.stage] = seconds.get(e.stage, 0.0) + max(0.0, e.t - began)
        spans[e.stage] = spans.get(e.stage, 0) + 1
        outer[e.stage] = outer.get(e.stage, False) or level == 0
    total = sum(t for stage, t in seconds.items() if outer[stage])
    return [StageTime(stage, spans[stage], seconds[stage],
                      (seconds[stage] / total if total > 0 else 0.0) if outer[stage] else None, not outer[stage])
            for stage in sorted(seconds, key=order.__getitem__)]


def open_stages(events: list[PhaseEvent], pid: int) -> list[PhaseEvent]:
    """Stages process `pid` started and did not end, outermost first."""
    stack: list[PhaseEvent] = []
    for e in events:
        if e.pid != pid:
            continue
        if e.event == "start":
            stack.append(e)
        else:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i].stage == e.stage and stack[i].generation == e.generation:
                    del stack[i]
                    break
    return stack


__all__ = ["PhaseEvent", "StageTime", "append", "open_stages", "read", "span", "stage_times"]
