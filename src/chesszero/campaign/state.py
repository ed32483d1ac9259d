"""Durable campaign state: where a campaign is, so any interruption resumes.

One JSON file per campaign (``runs/<campaign>/state.json``) written
atomically (temp file, fsync, rename). Each generation walks through fixed
phases; a phase is marked done only after its outputs are durable, so a
rerun repeats at most the phase that was cut, and phases are written to be
idempotent (see ``chesszero.campaign.generation``).
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chesszero.fsio import write_json_atomic


class Phase(str, enum.Enum):
    """Steps of one generation, in order."""

    SELFPLAY = "selfplay"
    MATERIALIZE = "materialize"
    TRAIN = "train"
    PUBLISH = "publish"
    RESIGN = "resign"
    EVALUATE = "evaluate"
    DONE = "done"

    def next(self) -> Phase:
        order = list(Phase)
        return order[min(order.index(self) + 1, len(order) - 1)]


@dataclass
class Counters:
    """Cumulative counters checked for consistency after a resume."""

    games: int = 0
    positions: int = 0
    rows_materialized: int = 0
    rows_admitted: int = 0
    presentations_funded: int = 0
    presentations_trained: int = 0
    optimizer_steps: int = 0


@dataclass
class Candidate:
    """A larger network training beside the active one (progressive sizing).

    ``promoting`` is set (to the winning artifact) once its gate has promoted
    it, before its checkpoint replaces the active one, so a crash in between
    finishes the handoff on resume."""

    size: str
    stage: int
    created: int
    reason: str
    promoting: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Candidate:
        return cls(**d)


@dataclass
class CampaignState:
    """Everything a campaign needs to continue after Ctrl-C or kill -9."""

    name: str
    preset: str
    generation: int = 0
    phase: Phase = Phase.SELFPLAY
    active_artifact: str | None = None
    active_generation: int | None = None
    admitted_shards: list[str] = field(default_factory=list)
    pending_shard: dict[str, Any] | None = None  # {"shard": path, "store_total_before": n}
    counters: Counters = field(default_factory=Counters)
    credit: dict[str, Any] = field(default_factory=dict)
    resign: dict[str, Any] = field(default_factory=dict)
    promotion: dict[str, Any] = field(default_factory=dict)
    stage: int = 0  # progressive sizing: index into [model.size, *progressive.stages]
    stage_started: int = 0  # generation the current stage began
    candidate: Candidate | None = None
    searched_elo: list[list[float]] = field(default_factory=list)  # [generation, joint Elo] per evaluation
    wall_seconds: float = 0.0
    seed: int = 0
    mlflow_run_id: str | None = None
    finished: bool = False
    uid: str = ""  # set once, before the MLflow run is made (tagged with it), so a rerun finds that run

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["phase"] = self.phase.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CampaignState:
        d = dict(d)
        d["phase"] = Phase(d["phase"])
        d["counters"] = Counters(**d.get("counters", {}))
        if d.get("candidate") is not None:
            d["candidate"] = Candidate.from_dict(d["candidate"])
        return cls(**d)

    def advance(self) -> None:
        """Moves to the next phase (or the next generation after the last)."""
        nxt = self.phase.next()
        if nxt == Phase.DONE:
            self.generation += 1
            self.phase = Phase.SELFPLAY
        else:
            self.phase = nxt


class StateStore:
    """Loads and saves a campaign's state file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> CampaignState:
        try:
            return CampaignState.from_dict(json.loads(self.path.read_text()))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"campaign state file {self.path} is unreadable: {exc}") from exc

    def save(self, state: CampaignState) -> None:
        write_json_atomic(self.path, state.to_dict())
