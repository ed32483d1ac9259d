"""Two self-play actors sharing one device, as ``publish.placement`` lays them
out: the games each plays alone against the games both play at once, and
how many of their batches were being evaluated at the same moment.

Used on the CPU (``test_placement``: the torch backend on the CPU) and on a
GPU (``test_gpu``: two actors on ``cuda:0``). A self-play actor is
deterministic given its seed and its evaluator's outputs (the batch
pipeline prepares and answers batches in a fixed order), so two actors
running side by side must play exactly the games each plays alone.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chesszero.publish.loading import load_evaluator
from chesszero.publish.placement import ActorLayout
from chesszero.search.evaluators import Evaluator, NetworkOutput
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor

Game = tuple[str, tuple[str, ...], tuple[str, ...], str]


class InFlight:
    """Counts the evaluations running at once over every evaluator it wraps."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self._lock = threading.Lock()

    def wrap(self, evaluator: Evaluator) -> Evaluator:
        counter = self

        class Counted:
            def evaluate(self, planes: np.ndarray) -> NetworkOutput:
                with counter._lock:
                    counter.now += 1
                    counter.most = max(counter.most, counter.now)
                try:
                    return evaluator.evaluate(planes)
                finally:
                    with counter._lock:
                        counter.now -= 1

        return Counted()


def actor_games(evaluator: Evaluator, seed: int) -> list[Game]:
    """Four finished games of a small actor seeded ``seed`` (two batches of two in flight)."""
    actor = SelfPlayActor(ActorSettings(actor_id=f"actor{seed}", games_in_flight=4, batch_size=2, seed=seed,
                                        random_opening_max_plies=4))
    try:
        report = actor.play(evaluator, visits=8, ply_cap=20, model_id="m", generation=0, games=4)
    finally:
        actor.close()
    return sorted((r.start_fen, tuple(r.prefix_moves), tuple(r.moves), r.result) for r in report.records)


@dataclass
class SideBySide:
    alone: list[list[Game]]
    together: list[list[Game]]
    most_in_flight: int


def two_actors_on_one_device(artifact: Path, backend: str, layout: ActorLayout) -> SideBySide:
    """Actors 0 and 1 of ``layout`` (both on one device), each alone, then both at once
    in two threads; each actor builds its own evaluator on ``layout.device(i)`` once
    (as a campaign's actor job does) and plays both rounds with it."""
    assert layout.actors >= 2 and layout.device(0) == layout.device(1)
    sessions = [load_evaluator(artifact, backend=backend, device=layout.device(i), plain_onnx=False)
                for i in range(2)]
    seeds = (101, 202)
    alone = [actor_games(sessions[i], seeds[i]) for i in range(2)]
    counter = InFlight()
    start = threading.Barrier(2, timeout=60)

    def play(i: int) -> list[Game]:
        session = counter.wrap(sessions[i])
        start.wait()
        return actor_games(session, seeds[i])

    with ThreadPoolExecutor(2) as pool:  # an actor's exception is raised here by map
        together = list(pool.map(play, range(2)))
    return SideBySide(alone, together, counter.most)
