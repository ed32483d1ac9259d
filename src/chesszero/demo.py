"""A short tour of the native core: perft, random games, encoding stats."""

from __future__ import annotations

import random
import time
from collections import Counter

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

from chesszero import core


def run_demo(*, games: int = 20, seed: int = 0, console: Console | None = None) -> dict[str, object]:
    """Plays `games` random games, prints perft and encoding statistics and
    returns them as a dict (used by tests)."""
    console = console or Console()
    rng = random.Random(seed)

    perft = Table(title="perft (native core)")
    for col in ("position", "depth", "nodes", "M nodes/s"):
        perft.add_column(col, justify="right")
    for name, fen, depth in (("start", core.STARTING_FEN, 5),
                             ("kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 4)):
        start = time.perf_counter()
        nodes = core.Game(fen).perft(depth)
        perft.add_row(name, str(depth), f"{nodes:,}", f"{nodes / (time.perf_counter() - start) / 1e6:.1f}")
    console.print(perft)

    terminations: Counter[str] = Counter()
    finished: list[core.Game] = []
    plies = 0
    for _ in track(range(games), description="random games", console=console):
        game = core.Game()
        while game.outcome() is None and game.ply < 400:
            game.push_uci(rng.choice(game.legal_uci()))
        outcome = game.outcome()
        terminations[outcome.termination.name.lower() if outcome else "ply_cap_400"] += 1
        plies += game.ply
        finished.append(game)

    start = time.perf_counter()
    planes = core.encode_batch(finished)
    packed = core.encode_packed_batch(finished)
    elapsed = time.perf_counter() - start
    assert np.array_equal(core.unpack_planes(packed), planes)

    table = Table(title=f"{games} random games")
    table.add_column("termination")
    table.add_column("games", justify="right")
    for name, count in terminations.most_common():
        table.add_row(name, str(count))
    console.print(table)
    console.print(
        f"mean length {plies / games:.1f} plies; encoded final positions: planes {planes.shape} "
        f"({planes.nbytes // len(finished)} bytes each), packed {packed.shape[1]} bytes each, "
        f"{2 * len(finished) / max(elapsed, 1e-9):,.0f} encodes/s; "
        f"non-zero planes per position {np.count_nonzero(planes.reshape(len(finished), 52, 64).any(-1)) / len(finished):.1f}"
    )
    return {"terminations": dict(terminations), "mean_plies": plies / games}
