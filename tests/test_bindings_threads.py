"""One native Searcher / Actor driven from several Python threads at once.

The bindings release the GIL for tree work and take a per-object mutex; they
must never wait for the GIL while holding that mutex (a thread holding the
GIL and waiting for the mutex would then deadlock with it). Each test runs
under a hard timeout (a deadlock fails it instead of hanging the suite) and
checks that the concurrent readers changed nothing: with one batch in flight
at a time the run must match a single-threaded run exactly.
"""

from __future__ import annotations

import contextlib
import faulthandler
import sys
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from search_support import hashed_answers as _answers

from chesszero import _core, core
from chesszero.search import SearchOptions

DEADLOCK_SECONDS = 300


@pytest.fixture(autouse=True)
def _deadlock_watchdog() -> Iterator[None]:
    """A deadlocked thread may hold the GIL, so no Python-level timeout can
    fire: faulthandler's watchdog thread needs no GIL. It prints every
    thread's stack and ends the process (the run fails instead of hanging)."""
    faulthandler.dump_traceback_later(DEADLOCK_SECONDS, exit=True, file=sys.__stderr__)
    yield
    faulthandler.cancel_dump_traceback_later()

FENS = [
    None,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1",
]


def _games() -> list[core.Game]:
    return [core.Game(fen) for fen in FENS]


class Pipeline:
    """A producer thread prepares batches and a submitter thread answers them
    in order (a queue of planes between them); `permits` batches may be in
    flight at once. Readers run until the pipeline stops."""

    def __init__(self, owner, rows: int, permits: int, more: Callable[[], bool]) -> None:
        self.owner = owner
        self.rows = rows
        self.more = more
        self.permits = threading.Semaphore(permits)
        self.queue: list[np.ndarray | None] = []
        self.ready = threading.Condition()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.batches = 0

    def _guard(self, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # surfaced by join()
                self.errors.append(exc)
                self.stop.set()
                with self.ready:
                    self.queue.append(None)
                    self.ready.notify_all()

        return run

    def _produce(self) -> None:
        while not self.stop.is_set() and self.more():
            self.permits.acquire()
            buf = np.zeros((self.rows, 52, 8, 8), np.float32)
            n = self.owner.prepare_batch(buf)
            if n == 0:
                self.permits.release()
                continue
            with self.ready:
                self.queue.append(buf[:n])
                self.ready.notify()
        with self.ready:
            self.queue.append(None)
            self.ready.notify()

    def _submit(self) -> None:
        while True:
            with self.ready:
                self.ready.wait_for(lambda: bool(self.queue))
                planes = self.queue.pop(0)
            if planes is None:
                return
            self.owner.submit_results(*_answers(planes))
            self.batches += 1
            self.permits.release()

    def run(self, readers: list[Callable[[], None]]) -> None:
        def loop(read: Callable[[], None]) -> Callable[[], None]:
            def body() -> None:
                while not self.stop.is_set():
                    read()

            return body

        workers = [threading.Thread(target=self._guard(self._submit))]
        workers += [threading.Thread(target=self._guard(loop(r))) for r in readers]
        producer = threading.Thread(target=self._guard(self._produce))
        for t in [*workers, producer]:
            t.start()
        producer.join()
        workers[0].join()
        self.stop.set()
        for t in workers[1:]:
            t.join()
        if self.errors:
            raise self.errors[0]


def _searcher_run(threaded: bool, permits: int = 1) -> list[dict]:
    searcher = _core.Searcher(len(FENS), SearchOptions.self_play(), 7, 2)
    games = _games()
    for slot, game in enumerate(games):
        searcher.start(slot, game, 60, noise=True)

    def read_state() -> None:
        assert 0 <= searcher.outstanding <= 2
        assert 0 <= searcher.active <= len(FENS)
        assert searcher.num_slots == len(FENS)
        for row in searcher.describe_batch():
            assert 0 <= row[0] < len(FENS)

    def read_results() -> None:
        for slot in range(len(FENS)):
            try:
                summary = searcher.result(slot, 4)
            except ValueError:  # root not evaluated yet
                continue
            assert summary["visits"] >= 1
            assert len(summary["moves"]) == len(games[slot].legal_uci())
            searcher.proofs(slot)

    pipe = Pipeline(searcher, rows=8, permits=permits, more=lambda: searcher.active > 0)
    if threaded:
        pipe.run([read_state, read_results, read_state])
    else:
        pipe.run([])
    assert searcher.outstanding == 0 and searcher.active == 0
    return [searcher.result(slot, 8) for slot in range(len(FENS))]


def test_searcher_shared_by_threads_matches_a_single_threaded_run() -> None:
    reference = _searcher_run(threaded=False)
    for _ in range(3):
        assert _searcher_run(threaded=True) == reference
    for summary in reference:  # the mate in one is proven at once
        assert summary["visits"] >= 60 or summary["proven"] == 1


def test_searcher_with_batches_overlapping_finishes_every_search() -> None:
    for summary in _searcher_run(threaded=True, permits=2):
        assert summary["visits"] >= 60 or summary["proven"] == 1


def test_searcher_restarted_while_readers_run() -> None:
    """start() and choose_move() from one thread while others read the results."""
    searcher = _core.Searcher(2, SearchOptions.evaluation(), 3, 1)
    stop = threading.Event()
    errors: list[BaseException] = []

    def read() -> None:
        try:
            while not stop.is_set():
                assert searcher.outstanding in (0, 1)
                for slot in range(2):
                    with contextlib.suppress(ValueError):  # no evaluated root yet
                        searcher.result(slot)
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    game = core.Game()
    try:
        for ply in range(6):
            for slot in range(2):
                searcher.start(slot, game, 24)
            buf = np.zeros((8, 52, 8, 8), np.float32)
            while searcher.active:
                n = searcher.prepare_batch(buf)
                if n:
                    searcher.submit_results(*_answers(buf[:n]))
            move = searcher.choose_move(0, _core.MoveChoiceOptions(mode=_core.MoveChoice.MOST_VISITS), ply)
            assert move in game.legal_uci()
            game.push_uci(move)
            if game.is_game_over():
                break
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors, errors[0]


def _actor_run(threaded: bool, batches: int = 200, permits: int = 1):
    options = _core.ActorOptions(num_games=5, seed=21, max_outstanding=2)
    actor = _core.Actor(options)
    actor.set_limits(visits=8, ply_cap=16)
    for i in range(3):
        actor.queue_resume(core.Game(FENS[i + 1]), 0, f"r{i}", _core.StartKind.RANDOM, i == 0)
    collected: list[_core.GameLog] = []
    lock = threading.Lock()
    prepared = [0]

    def more() -> bool:
        prepared[0] += 1
        return prepared[0] <= batches

    def read_state() -> None:
        assert 0 <= actor.outstanding <= 2
        assert 0 <= actor.active_games <= 5
        assert actor.max_outstanding == 2
        assert actor.queued_restarts == 0 and actor.queued_resumes <= 3
        assert actor.accepting
        c = actor.counters()
        assert c["games_finished"] <= c["games_started"]
        for row in actor.describe_batch():
            assert 0 <= row[0] < 5

    def take() -> None:
        got = actor.take_finished()
        with lock:
            collected.extend(got)

    pipe = Pipeline(actor, rows=6, permits=permits, more=more)
    pipe.run([read_state, take, read_state] if threaded else [])
    collected.extend(actor.take_finished())
    counters = actor.counters()
    assert counters["batches"] == pipe.batches
    actor.accepting = False
    unfinished = actor.drain()
    games = sorted(
        (g.id, tuple(g.prefix), tuple(g.moves), g.ending, g.result, g.visits.tolist(), g.root_value.tolist())
        for g in [*collected, *unfinished]
    )
    return games, counters


def test_actor_shared_by_threads_matches_a_single_threaded_run() -> None:
    reference, counters = _actor_run(threaded=False)
    assert counters["games_finished"] >= 3  # games ended while readers were running
    for _ in range(3):
        assert _actor_run(threaded=True) == (reference, counters)


def test_actor_with_batches_overlapping_keeps_its_books() -> None:
    games, counters = _actor_run(threaded=True, permits=2)
    assert counters["games_started"] == len(games)
    assert counters["evaluations"] > 0 and counters["batches"] > 0


def test_racing_drivers_get_refusals_never_a_crash() -> None:
    """Threads that prepare and submit without any coordination: a submit may
    answer another thread's batch with the wrong row count (ValueError,
    nothing changed) or find none outstanding, but the searcher ends in a
    consistent state and every search finishes."""
    searcher = _core.Searcher(len(FENS), SearchOptions.self_play(), 5, 2)
    for slot, game in enumerate(_games()):
        searcher.start(slot, game, 40)
    errors: list[BaseException] = []
    refusals = [0]

    def drive() -> None:
        buf = np.zeros((5, 52, 8, 8), np.float32)
        try:
            while searcher.active or searcher.outstanding:
                try:
                    n = searcher.prepare_batch(buf)
                except ValueError:
                    n = 0
                    refusals[0] += 1
                rows = n if n else len(searcher.describe_batch())
                if rows == 0:
                    continue
                try:
                    searcher.submit_results(*_answers(buf[:rows]))
                except ValueError:
                    refusals[0] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=drive) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert searcher.outstanding == 0 and searcher.active == 0
    for slot in range(len(FENS)):
        summary = searcher.result(slot)
        assert summary["visits"] >= 40 or summary["proven"] == 1


def test_encode_batch_while_other_threads_play_moves() -> None:
    """encode_batch and perft work on snapshots taken with the GIL held: games
    that other threads change meanwhile encode as one of their states, whole."""
    line = ("g1f3", "g8f6", "f3g1", "f6g8")
    states = [core.Game()]
    for uci in line:
        states.append(states[-1].copy())
        states[-1].push_uci(uci)
    valid = [s.encode() for s in states]
    games = [core.Game() for _ in range(16)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn(game: core.Game) -> None:
        try:
            while not stop.is_set():
                for uci in line:
                    game.push_uci(uci)
                for _ in line:
                    game.pop()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(g,)) for g in games[:4]]
    for t in threads:
        t.start()
    try:
        for _ in range(200):
            planes = core.encode_batch(games)
            packed = core.encode_packed_batch(games)
            for row in range(4):
                assert any(np.array_equal(planes[row], v) for v in valid)
                unpacked = core.unpack_planes(packed[row : row + 1])[0]
                assert any(np.array_equal(unpacked, v) for v in valid)
            np.testing.assert_array_equal(planes[4], valid[0])
            assert games[0].perft(2) in (400, 440, 482, 438)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]


def test_python_threads_run_while_perft_counts() -> None:
    """perft releases the GIL: a Python thread keeps running while one long
    native call counts (search calls are short steps, each released the same
    way; perft is the one long call)."""
    kiwipete = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
    game = core.Game(kiwipete)
    span: dict[str, float] = {}
    result: list[int] = []

    def count() -> None:
        span["start"] = time.monotonic()
        result.append(game.perft(5))
        span["end"] = time.monotonic()

    worker = threading.Thread(target=count)
    ticks: list[float] = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.monotonic())
    worker.join()
    assert result == [193690690]
    assert span["end"] - span["start"] > 0.1, "perft too quick to sample"
    inside = [t for t in ticks if span["start"] + 0.02 < t < span["end"] - 0.02]
    assert len(inside) > 1000, f"the Python thread ran {len(inside)} times during perft: the GIL was held"
