"""Shared helpers for the model and training tests (no chess logic of the package).

``reference_action_triples`` is the independent SPEC 3 enumeration of
``encoding_reference``, used to cross-check the native core and, until the
core is built, to give test networks a table.  ``reference_table`` prefers the core.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest
from encoding_reference import action_table as reference_action_triples

from chesszero.model import ActionTable, core_action_table


def core_available() -> bool:
    """Whether the native core extension imports."""
    try:
        importlib.import_module("chesszero.core")
    except ImportError:
        return False
    return True


requires_core = pytest.mark.skipif(not core_available(), reason="native core not built")


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Run torch single-threaded: tiny networks on a shared 2-core machine are far
    faster without intra-op threads contending with other processes."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def reference_table() -> ActionTable:
    """The core's action table, or the reference derivation while the core is unbuilt."""
    if core_available():
        return core_action_table()
    return ActionTable.from_triples(reference_action_triples())



NO_CASTLING_FEN = "r3k2r/pppq1ppp/2npbn2/4p3/4P3/2NPBN2/PPPQ1PPP/R3K2R w - - 4 9"


def make_rows(n: int, seed: int = 0, *, policy_width: int = 8):  # -> RowBatch
    """``n`` plausible replay rows (a ``RowBatch``), see :func:`make_raw_rows`."""
    import numpy as np

    from chesszero.replay.rows import RowBatch

    return RowBatch.from_rows(make_raw_rows(n, seed, policy_width=policy_width), np.arange(n))


def make_raw_rows(n: int, seed: int = 0, *, policy_width: int = 8):  # -> ROW_DTYPE array
    """``n`` plausible, storable replay rows from random play through the native core.

    Policies put random mass on up to ``policy_width`` legal moves; every third
    row lacks a next-policy label and every fourth a length label.  Half the
    games start from a position without castling rights.
    """
    import numpy as np

    from chesszero import core
    from chesszero.replay.layout import empty_rows, pack_legal

    rng = np.random.default_rng(seed)
    rows = empty_rows(n)
    i = 0
    while i < n:
        game = core.Game(None if rng.random() < 0.5 else NO_CASTLING_FEN)
        for _ in range(int(rng.integers(0, 12))):
            legal = game.legal_actions()
            if len(legal) == 0:
                break
            game.push_action(int(rng.choice(legal)))
        while i < n and game.outcome() is None and game.ply < 80:
            legal = np.asarray(game.legal_actions())
            row = rows[i]
            row["planes"] = game.encode_packed()
            row["legal"] = pack_legal(legal)
            k = min(policy_width, len(legal))
            ids = rng.choice(legal, size=k, replace=False)
            probs = rng.dirichlet(np.ones(k)).astype(np.float32)
            row["policy_ids"][:k] = ids
            row["policy_probs"][:k] = probs
            row["wdl"] = rng.dirichlet(np.ones(3))
            row["root_value"] = rng.uniform(-1, 1)
            row["surprise"] = rng.exponential(0.5)
            row["timestamp"] = 1.7e9 + i
            row["ply"] = game.ply
            game.push_action(int(rng.choice(ids, p=probs / probs.sum())))
            nxt = np.asarray(game.legal_actions())
            if i % 3 != 0 and len(nxt):
                kn = min(policy_width, len(nxt))
                row["next_ids"][:kn] = rng.choice(nxt, size=kn, replace=False)
                row["next_probs"][:kn] = rng.dirichlet(np.ones(kn))
                row["next_mask"] = 1
            if i % 4 != 0:
                row["length"] = rng.integers(1, 200) / 400.0
                row["length_mask"] = 1
            i += 1
    return rows
