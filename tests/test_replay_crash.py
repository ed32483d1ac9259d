"""kill -9 during appends, and concurrent readers: no torn row is ever admitted or read.

A child process appends synthetic rows (content determined by the row's id)
and is killed with SIGKILL either at a chosen point inside ``append`` (it
announces the point and blocks, so the test waits on an event, not a sleep)
or at whatever moment it is in when it announces the start of an append.
The store must reopen with a valid header, consistent counts and only
untorn rows, and must accept appends again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_replay_support import assert_untorn, synthetic_rows

from chesszero.replay import ReplayStore, StaleRowsError

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys
import numpy as np
from chesszero.replay import ReplayStore
from test_replay_support import synthetic_rows

path, mode, arg = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = ReplayStore.open(path)
chunk = 300
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


def _spawn(path: Path, mode: str, arg: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT / 'tests'}")
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), mode, str(arg)],
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


def _seed_store(path: Path) -> None:
    with ReplayStore.create(path, capacity=1024, logical_capacity=700) as store:
        store.append(synthetic_rows(np.arange(650)))  # the next append must evict


@pytest.mark.parametrize("flush_call", [1, 2, 3, 4, 5])
def test_kill_at_each_step_of_an_append(tmp_path: Path, flush_call: int) -> None:
    path = tmp_path / "r.bin"
    _seed_store(path)
    proc = _spawn(path, "hook", flush_call)
    line = _kill_when(proc, "hook")
    before = int(line.split()[1])
    with _check_consistent(path) as store:
        # the interrupted append is never admitted; evicted rows left first
        assert store.total_appended == before
        assert store.size <= 650
        store.append(synthetic_rows(np.arange(before, before + 300)))
        assert store.total_appended == before + 300
        assert_untorn(store.read_valid().__dict__)


def test_kill_at_random_moments(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    _seed_store(path)
    for round_ in range(4):
        proc = _spawn(path, "loop", 0)
        line = _kill_when(proc, f"begin {2 + round_}")
        before = int(line.split()[2])
        with _check_consistent(path) as store:
            assert store.total_appended in (before, before + 300)


def test_concurrent_reader_never_sees_torn_rows(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    _seed_store(path)
    proc = _spawn(path, "loop", 0)
    assert proc.stdout is not None
    reader = ReplayStore.open(path, readonly=True)
    rng = np.random.default_rng(0)
    reads = stale = 0
    try:
        for line in proc.stdout:  # one check per append the writer starts
            # read with the snapshot taken one append ago (rows may have been
            # evicted or be under rewrite right now), then adopt the new header
            slots = reader.header.valid_slots()
            pick = rng.choice(slots, size=min(64, slots.size), replace=False)
            try:
                assert_untorn(reader.read(pick).__dict__)
                reads += 1
            except StaleRowsError as exc:
                assert exc.slots.size > 0
                stale += 1
            reader.refresh()
            if int(line.split()[1]) >= 60:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        reader.close()
    assert reads > 0 and stale > 0 and reads + stale >= 60
