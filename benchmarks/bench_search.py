"""Search and self-play benchmark, one run, ratios measured on this machine.

1. Tree simulations per CPU-second (one core, process time, so other load on
   the machine cancels out) with the uniform evaluator: the native
   search (analysis searcher and self-play actor, planes encoded for every
   leaf) against a small pure-Python PUCT over python-chess (written below,
   same rule, first-play urgency, discount and terminal checks; it encodes
   nothing). Target (issue 3): >= 50x. Native rates are the best of three
   windows (a shared machine's noise only ever slows a window down); the
   actor is measured in its steady state, after every game has finished a
   search.
2. Self-play with a real ``cpu``-size network (6x64, SPEC 4) exported to
   ONNX (one intra-op thread): in each round a self-play window records the
   sizes of the batches the actor sends to the network, then pure ONNX
   Runtime inference runs on batches of exactly those sizes (real positions).
   The rows name what they count: network evaluations/s of self-play
   (terminal hits need no network and are excluded) against inference
   positions/s on the same batches (target, issue 3: >= 0.85 for the
   double-buffered actor, self-play's pipeline depth; the sequential actor is
   shown without a target, for what double buffering buys), and searches/s
   (whole searches finished, one per move played) as their own row. Rates
   are medians over rounds (the machine may be shared), searches/s is over
   all rounds together (games start together, so searches end in bursts).

Run: ``.venv/bin/python benchmarks/bench_search.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import chess
import numpy as np
from common import Row, report
from targets import target

from chesszero import _core, core
from chesszero.search import BatchPipeline, BatchSearch, OnnxEvaluator, UniformEvaluator

# ------------------------------------------------------------- pure-Python reference


class PyNode:
    __slots__ = ("children", "move", "n", "prior", "terminal", "w")

    def __init__(self, move: chess.Move | None, prior: float) -> None:
        self.move = move
        self.prior = prior
        self.n = 0.0
        self.w = 0.0  # sum of values from this node's side to move
        self.children: list[PyNode] | None = None
        self.terminal: float | None = None


def _terminal_value(board: chess.Board) -> float | None:
    if board.is_checkmate():
        return -1.0
    if (
        board.is_stalemate()
        or board.is_insufficient_material()
        or board.halfmove_clock >= 100
        or board.is_repetition(3)
    ):
        return 0.0
    return None


def py_puct(
    board: chess.Board, visits: int, c: float = 1.5, fpu: float = 0.2, gamma: float = 0.99
) -> int:
    """Pure-Python PUCT with a uniform evaluator; returns simulations run."""
    root = PyNode(None, 1.0)
    sims = 0
    while root.n < visits:
        node, path = root, [root]
        while node.children is not None and node.terminal is None:
            sqrt_n = math.sqrt(max(1.0, node.n))
            parent_value = node.w / node.n if node.n > 0 else 0.0
            best, best_score = None, -1e30
            for ch in node.children:
                q = -gamma * ch.w / ch.n if ch.n > 0 else parent_value - fpu
                score = q + c * ch.prior * sqrt_n / (1.0 + ch.n)
                if score > best_score:
                    best, best_score = ch, score
            node = best
            board.push(node.move)
            path.append(node)
        if node.terminal is not None:
            value = node.terminal
        else:
            value = _terminal_value(board)
            if value is not None:
                node.terminal = value
            else:
                moves = list(board.legal_moves)
                node.children = [PyNode(m, 1.0 / len(moves)) for m in moves]
                value = 0.0  # the uniform evaluator's W - L
        for i, n in enumerate(reversed(path)):
            n.n += 1.0
            n.w += value
            value = -gamma * value
            if i < len(path) - 1:
                board.pop()
        sims += 1
    return sims


# ------------------------------------------------------------------------ positions


def positions(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    fens = [chess.STARTING_FEN]
    while len(fens) < count:
        b = chess.Board()
        for _ in range(rng.randint(6, 30)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        if not b.is_game_over():
            fens.append(b.fen())
    return fens


# ---------------------------------------------------------------------- measurements


def native_searcher_rate(fens: list[str], visits: int) -> float:
    search = BatchSearch(
        UniformEvaluator(), slots=len(fens), options=_core.SearchOptions.self_play()
    )
    games = [core.Game(f) for f in fens]
    best = 0.0
    for _ in range(3):
        for i in range(len(fens)):
            search.forget(i)
        start = time.process_time()
        results = search.search(games, visits=visits)
        elapsed = time.process_time() - start
        best = max(best, sum(r.visits for r in results) / elapsed)
    return best


class BatchRecorder:
    """An evaluator that records the size of every batch it is given."""

    def __init__(self, evaluator: object) -> None:
        self.evaluator = evaluator
        self.sizes: list[int] = []

    def evaluate(self, planes: np.ndarray) -> object:
        self.sizes.append(int(planes.shape[0]))  # list.append is atomic: the pipeline's thread may call
        return self.evaluator.evaluate(planes)  # type: ignore[attr-defined]


@dataclass
class Window:
    """What one self-play window did: counter deltas, time, and the batch sizes sent."""

    seconds: float
    evaluations: int
    terminal_hits: int
    searches: int
    sizes: list[int] = field(default_factory=list)

    @property
    def simulations_per_s(self) -> float:
        """Tree simulations: network evaluations plus traversals ended at a terminal node."""
        return (self.evaluations + self.terminal_hits) / self.seconds

    @property
    def evaluations_per_s(self) -> float:
        return self.evaluations / self.seconds

    @property
    def searches_per_s(self) -> float:
        return self.searches / self.seconds


class ActorRun:
    """A self-play actor kept warm between measurements."""

    def __init__(
        self,
        evaluator: object,
        *,
        games: int,
        batch: int,
        depth: int,
        visits: int,
        warmup_batches: int | None = None,
    ) -> None:
        self.actor = _core.Actor(_core.ActorOptions(num_games=games, max_outstanding=depth, seed=3))
        self.actor.set_limits(visits=visits, ply_cap=150)
        self.recorder = BatchRecorder(evaluator)
        self.pipe = BatchPipeline(self.actor, self.recorder, batch_size=batch, depth=depth)
        # Warm up. With enough batches for every game to finish a search and
        # keep its subtree, the trees and buffers are at their working size
        # (self-play's steady state) when the measurement starts.
        for _ in range(2 * depth if warmup_batches is None else warmup_batches):
            self.pipe.step()
        self.pipe.flush()

    def window(self, *, batches: int | None = None, seconds: float | None = None,
               clock: Callable[[], float] = time.perf_counter) -> Window:
        """Runs `batches` batches, or batches for at least `seconds` of `clock`, and flushes."""
        if (batches is None) == (seconds is None):
            raise ValueError("give exactly one of batches and seconds")
        self.recorder.sizes = []
        before = self.actor.counters()
        start = clock()
        done = 0
        while (done < batches) if batches is not None else (clock() - start < seconds or done == 0):
            self.pipe.step()
            done += 1
        self.pipe.flush()
        elapsed = clock() - start
        after = self.actor.counters()
        return Window(elapsed, *(int(after[k] - before[k]) for k in ("evaluations", "terminal_hits", "searches")),
                      sizes=self.recorder.sizes)

    def rate(self, batches: int, clock: Callable[[], float] = time.perf_counter) -> float:
        """Simulations/s (network evaluations + terminal hits) over `batches` batches."""
        return self.window(batches=batches, clock=clock).simulations_per_s

    def close(self) -> None:
        self.pipe.close()


def export_cpu_network(path: Path) -> Path:
    import torch

    from chesszero.model import ChessNet

    class Deployable(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = ChessNet("6x64", aux_heads=False).inference_view()

        def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            policy, wdl = self.net(planes)
            return policy, torch.softmax(wdl, dim=-1)

    torch.manual_seed(0)
    model = Deployable().eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the legacy exporter announces its deprecation
        torch.onnx.export(
            model,
            (torch.zeros(2, 52, 8, 8),),
            str(path),
            input_names=["planes"],
            output_names=["policy_logits", "wdl"],
            dynamic_axes={"planes": {0: "n"}, "policy_logits": {0: "n"}, "wdl": {0: "n"}},
            opset_version=17,
            dynamo=False,
        )
    return path


def inference_rate(evaluator: OnnxEvaluator, planes: np.ndarray, seconds: float) -> float:
    """Pure inference positions/s on a fixed batch of real positions."""
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        evaluator.evaluate(planes)
        n += planes.shape[0]
    return n / (time.perf_counter() - start)


def inference_rate_on(evaluator: object, planes: np.ndarray, sizes: list[int]) -> float:
    """Pure inference positions/s on batches of `sizes` (slices of `planes`, real positions)."""
    start = time.perf_counter()
    for n in sizes:
        evaluator.evaluate(planes[:n])  # type: ignore[attr-defined]
    return sum(sizes) / (time.perf_counter() - start)


@dataclass(frozen=True)
class Paired:
    """Medians over rounds of one self-play window and pure inference on its batches."""

    inference_pos_per_s: float
    evaluations_per_s: float
    searches_per_s: float
    """Over all rounds together, extended until they hold one search per game (the games
    start together, so searches end in bursts)."""
    ratio: float
    """Median of the per-round evaluations/s over inference positions/s."""
    mean_batch: float
    rounds: int


def paired_ratio(evaluator: object, *, batch: int, depth: int, rounds: int, seconds: float) -> Paired:
    """Alternates self-play windows and pure inference on the batch sizes each window
    sent to the network (so load drift on a shared machine hits both alike)."""
    planes = core.encode_batch([core.Game(f) for f in positions(batch, seed=4)])
    evaluator.evaluate(planes)  # type: ignore[attr-defined]
    run = ActorRun(evaluator, games=batch * depth, batch=batch, depth=depth, visits=64)
    # Past the cold start (every game's first search has all 64 visits to run, later ones
    # keep their subtree) before searches/s is measured; at most a few windows long.
    warm = time.perf_counter()
    while run.actor.counters()["searches"] < batch * depth and time.perf_counter() - warm < 4 * seconds:
        run.pipe.step()
    run.pipe.flush()
    pures, evals, ratios, sizes = [], [], [], []
    searches, played_s = 0, 0.0
    try:
        for _ in range(rounds):
            played = run.window(seconds=seconds)
            pure = inference_rate_on(evaluator, planes, played.sizes)
            pures.append(pure)
            evals.append(played.evaluations_per_s)
            ratios.append(played.evaluations_per_s / pure)
            sizes += played.sizes
            searches += played.searches
            played_s += played.seconds
        # Searches end in bursts (the games start together), so short windows on a slow host
        # can hold none: searches/s is measured over windows holding one search per game.
        while searches < batch * depth and played_s < 20 * seconds + 30:
            played = run.window(seconds=seconds)
            searches += played.searches
            played_s += played.seconds
    finally:
        run.close()
    return Paired(float(np.median(pures)), float(np.median(evals)), searches / played_s,
                  float(np.median(ratios)), float(np.mean(sizes)), rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budgets (CI smoke)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    quick = args.quick
    rows: list[Row] = []

    fens = positions(8 if quick else 32)
    visits = 200 if quick else 800
    start = time.process_time()
    sims = sum(py_puct(chess.Board(f), visits) for f in fens)
    py_rate = sims / (time.process_time() - start)
    rows.append(Row(f"python-chess PUCT, {len(fens)} positions", py_rate, "sims/s", "reference"))
    rate = native_searcher_rate(fens, visits)
    rows.append(
        Row("native searcher, same positions", rate, "sims/s", "python PUCT", rate / py_rate,
            target=target("tree-vs-python"))
    )
    # One leaf per game and batch: `visits` batches finish a search in every game.
    run = ActorRun(
        UniformEvaluator(), games=128, batch=128, depth=1, visits=200, warmup_batches=200
    )
    rate = max(run.rate(50 if quick else 150, clock=time.process_time) for _ in range(3))
    run.close()
    rows.append(Row("native self-play, 128 games", rate, "sims/s", "python PUCT", rate / py_rate,
                    target=target("tree-vs-python")))

    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = export_cpu_network(Path(tmp) / "cpu_6x64.onnx")
        evaluator = OnnxEvaluator(onnx_path, threads=1)
        for batch in (64,) if quick else (64, 256):
            for depth in (1, 2):
                paired = paired_ratio(
                    evaluator, batch=batch, depth=depth, rounds=3, seconds=1.5 if quick else 4.0
                )
                label = "double-buffered" if depth == 2 else "sequential"
                setup = {"batch": batch, "mean_batch": round(paired.mean_batch, 1), "rounds": paired.rounds}
                rows.append(Row(f"ONNX Runtime 6x64 on the {label} actor's batches (batch {batch})",
                                paired.inference_pos_per_s, "positions/s", "reference", None, setup))
                rows.append(Row(f"self-play 6x64, batch {batch}, {label}: network evaluations",
                                paired.evaluations_per_s, "evaluations/s", "ONNX Runtime, same batches",
                                paired.ratio, setup,
                                target("selfplay-vs-inference") if depth == 2 else None))
                rows.append(Row(f"self-play 6x64, batch {batch}, {label}: searches",
                                paired.searches_per_s, "searches/s", "", None, {"visits": 64}))

    report("chesszero search benchmark", rows, args.json)


if __name__ == "__main__":
    main()
