"""Shared helpers for the replay tests: rows whose every byte follows from an id.

``synthetic_rows(ids)`` builds valid rows whose content is a deterministic
function of ``ids`` (stored in ``timestamp``); ``assert_untorn`` checks that
each row still matches its id in every field, which is how the crash and
concurrency tests detect a torn or mixed row. No tests live here.
"""

from __future__ import annotations

import numpy as np

from chesszero.replay.layout import LEGAL_BYTES, NUM_ACTIONS, PACKED_BYTES, empty_rows


def synthetic_rows(ids: np.ndarray, surprise: np.ndarray | None = None) -> np.ndarray:
    """Valid rows determined by integer ``ids`` (and optional surprise values)."""
    ids = np.asarray(ids, dtype=np.int64)
    n = ids.size
    rows = empty_rows(n)
    rows["timestamp"] = ids.astype(np.float64)
    rows["planes"] = (ids[:, None] * 7 + np.arange(PACKED_BYTES)[None, :]) % 256
    rows["legal"] = (ids[:, None] * 13 + np.arange(LEGAL_BYTES)[None, :]) % 256
    rows["policy_ids"][:, 0] = ids % NUM_ACTIONS
    rows["policy_ids"][:, 1] = (ids + 1) % NUM_ACTIONS
    rows["policy_probs"][:, 0] = 0.75
    rows["policy_probs"][:, 1] = 0.25
    rows["wdl"] = np.array([0.5, 0.25, 0.25], dtype=np.float32)
    rows["root_value"] = ((ids % 200) - 100) / 100.0
    rows["surprise"] = (ids % 50) / 10.0 if surprise is None else surprise
    rows["generation"] = ids % 1000
    rows["ply"] = ids % 300
    rows["length"] = (ids % 400) / 400.0
    rows["length_mask"] = 1
    return rows


def assert_untorn(batch_rows: dict[str, np.ndarray]) -> None:
    """Every field of every row agrees with the id in its ``timestamp``."""
    ids = batch_rows["timestamp"].astype(np.int64)
    expect = synthetic_rows(ids)
    for name in ("planes", "legal", "policy_ids", "policy_probs", "root_value", "generation",
                 "ply", "length", "surprise"):
        np.testing.assert_array_equal(batch_rows[name], expect[name], err_msg=f"torn field {name}")
