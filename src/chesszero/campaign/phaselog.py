"""The phase log: when each stage of a campaign started and ended.

``runs/<campaign>/phases.jsonl`` gets one JSON line when a stage starts and
one when it ends (``{"t", "pid", "generation", "stage", "event"}``, event
``start`` or ``end``), appended with one ``write`` each. A start with no end
from the same process is where that process stopped (a crash, Ctrl-C or
kill -9); ``chesszero campaign status`` users and the kill test read it to see
where a campaign was. A line cut by a kill is skipped when reading.
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


__all__ = ["PhaseEvent", "append", "open_stages", "read", "span"]
