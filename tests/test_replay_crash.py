"""kill -9 during appends, and concurrent readers: no torn row is ever admitted or read.

A child process appends synthetic rows (content determined by the row's id)
and is killed with SIGKILL either at a chosen point inside ``append`` (it
announces the point and blocks, so the test waits on an event, not a sleep)
or at whatever moment it is in when it announces the start of an append.
The store must reopen with a valid header, consistent counts and only
untorn rows, and must accept appends again. Appends are atomic as a whole:
with calls larger than ``WRITE_CHUNK_ROWS`` (several write pieces, a wrap of
the ring) either every row of the interrupted call is visible or none is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from replay_support import assert_untorn, synthetic_rows

from chesszero.replay import ReplayStore, StaleRowsError

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys
import numpy as np
from chesszero.replay import ReplayStore
from replay_support import synthetic_rows

path, mode, arg, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = ReplayStore.open(path)
if mode == "hook":
    real_flush = store._flush
    calls = [0]
    def flush(start, stop):
        calls[0] += 1
        if calls[0] == arg:
            # scribble over the slots this append is writing: a torn write
            h = store.header
            slots = h.append_to_slot(np.arange(h.total_appended, h.total_appended + chunk))
            store._rows[slots] = np.frombuffer(np.random.bytes(store._rows.itemsize * chunk),
                                               dtype=store._rows.dtype)
            print("hook", h.total_appended, flush=True)
            sys.stdin.read()  # block until killed
        real_flush(start, stop)
    store._flush = flush
    t = store.total_appended
    store.append(synthetic_rows(np.arange(t, t + chunk)))
    print("finished", flush=True)
    sys.stdin.read()
else:
    k = 0
    while True:
        t = store.total_appended
        print("begin", k, t, flush=True)
        store.append(synthetic_rows(np.arange(t, t + chunk)))
        k += 1
"""


SMALL = 300      # one write piece
LARGE = 9_000    # three write pieces (WRITE_CHUNK_ROWS = 4096), wrapping the ring


def _spawn(path: Path, mode: str, arg: int, chunk: int = SMALL) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT / 'tests'}")
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), mode, str(arg), str(chunk)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def _kill_when(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(prefix):
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            return line
    proc.wait(timeout=30)
    raise AssertionError(f"child exited ({proc.returncode}) before printing {prefix!r}")


def _check_consistent(path: Path) -> ReplayStore:
    store = ReplayStore.open(path)  # the dead writer's lock is gone
    h = store.header
    rows = store.read_valid()
    assert rows.seq.tolist() == list(range(h.total_appended - h.size, h.total_appended))
    assert_untorn(rows.__dict__)
    return store


def _seed_store(path: Path, chunk: int = SMALL) -> None:
    """A store whose next append of ``chunk`` rows wraps the ring and must evict."""
    if chunk == SMALL:
        capacity, logical, seed = 1024, 700, 650
    else:
        capacity, logical, seed = 16_384, 12_000, 10_000
    with ReplayStore.create(path, capacity=capacity, logical_capacity=logical) as store:
        store.append(synthetic_rows(np.arange(seed)))


def _flush_calls(chunk: int) -> int:
    """``_flush`` calls of the first append into a ``_seed_store`` store, before its
    final header commit: the eviction header, then per write piece one flush of
    the priorities and one of the rows for each contiguous run of slots."""
    return {SMALL: 1 + 2 * 2, LARGE: 1 + 2 * 2 + 2 + 2}[chunk]


@pytest.mark.parametrize(("chunk", "flush_call"),
                         [(SMALL, k) for k in range(1, _flush_calls(SMALL) + 1)]
                         + [(LARGE, k) for k in range(1, _flush_calls(LARGE) + 1)])
def test_kill_at_each_step_of_an_append(tmp_path: Path, chunk: int, flush_call: int) -> None:
    path = tmp_path / "r.bin"
    _seed_store(path, chunk)
    proc = _spawn(path, "hook", flush_call, chunk)
    line = _kill_when(proc, "hook")
    before = int(line.split()[1])
    with _check_consistent(path) as store:
        # the interrupted append is never admitted, not even in part;
        # evicted rows left first
        assert store.total_appended == before
        assert store.read_valid().seq.max() < before
        store.append(synthetic_rows(np.arange(before, before + chunk)))
        assert store.total_appended == before + chunk
        assert_untorn(store.read_valid().__dict__)


def test_hook_counts_every_flush_of_a_multi_piece_append(tmp_path: Path) -> None:
    """The parametrisation above really reaches the last write flush."""
    path = tmp_path / "r.bin"
    _seed_store(path, LARGE)
    calls: list[tuple[int, int]] = []
    with ReplayStore.open(path) as store:
        real = store._flush
        store._flush = lambda a, b: (calls.append((a, b)), real(a, b))[1]  # type: ignore[method-assign]
        store.append(synthetic_rows(np.arange(10_000, 10_000 + LARGE)))
    assert len(calls) == _flush_calls(LARGE) + 1  # + the final header commit


@pytest.mark.parametrize("chunk", [SMALL, LARGE])
def test_kill_at_random_moments(tmp_path: Path, chunk: int) -> None:
    path = tmp_path / "r.bin"
    _seed_store(path, chunk)
    for round_ in range(4):
        proc = _spawn(path, "loop", 0, chunk)
        line = _kill_when(proc, f"begin {2 + round_}")
        before = int(line.split()[2])
        with _check_consistent(path) as store:
            # all rows of a call or none: whole calls only
            done = store.total_appended - before
            assert done >= 0 and done % chunk == 0, (before, store.total_appended)


@pytest.mark.parametrize(("chunk", "appends"), [(SMALL, 60), (LARGE, 16)])
def test_concurrent_reader_never_sees_torn_rows(tmp_path: Path, chunk: int, appends: int) -> None:
    path = tmp_path / "r.bin"
    _seed_store(path, chunk)
    proc = _spawn(path, "loop", 0, chunk)
    assert proc.stdout is not None
    reader = ReplayStore.open(path, readonly=True)
    rng = np.random.default_rng(0)
    reads = stale = 0
    try:
        for k, line in enumerate(proc.stdout):  # one check per append the writer starts
            # read with the snapshot taken one append ago (rows may have been
            # evicted or be under rewrite right now), then adopt the new header;
            # every other time only among the newest rows, which a large append
            # does not evict in one go
            slots = reader.header.valid_slots()
            if k % 2:
                slots = slots[-max(1, slots.size // 5):]
            pick = rng.choice(slots, size=min(64, slots.size), replace=False)
            try:
                assert_untorn(reader.read(pick).__dict__)
                reads += 1
            except StaleRowsError as exc:
                assert exc.slots.size > 0
                stale += 1
            reader.refresh()
            if int(line.split()[1]) >= appends:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        reader.close()
    assert reads > 0 and stale > 0 and reads + stale >= appends
