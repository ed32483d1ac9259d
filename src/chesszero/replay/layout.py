"""Fixed binary layout of one replay row (SPEC 2, 5, 7).

A row is one searched position ready for training. Its layout is a numpy
structured dtype of fixed size (``ROW_DTYPE``), stored verbatim in the
memory-mapped ring file; ``LAYOUT_VERSION`` changes whenever it changes, and
stores written with another version are refused.

Field by field (all little-endian):

==================  ==============  ================================================
field               type            meaning
==================  ==============  ================================================
seq                 int64           global append index, stamped by the store
timestamp           float64         unix time (s) the source game finished
policy_probs        float32[60]     search policy pi over ``policy_ids``, sums to 1
next_probs          float32[60]     next searched policy (valid if ``next_mask``)
wdl                 float32[3]      outcome target W/D/L, already blurred and blended
root_value          float32         searched root value, side to move, in [-1, 1]
surprise            float32         KL(pi_search || p_prior) >= 0 (sampling priority)
policy_discarded    float32         visit mass dropped by the 60-action cap, as a
                                    fraction of the pruned visits (0 when none)
length              float32         plies_remaining / 400 (valid if ``length_mask``)
generation          int32           generation of the model that played the game
policy_ids          int16[60]       action ids (SPEC 3) of pi, -1 padding at the end
next_ids            int16[60]       action ids of the next policy, -1 padding
ply                 int16           ply of the position in its game (0 = start FEN)
planes              uint8[332]      packed input planes (SPEC 2), opaque here
legal               uint8[235]      legal-action bitset: action a is bit ``a % 8``
                                    (little bit order) of byte ``a // 8``
next_mask           uint8           1 when the next-policy label exists
length_mask         uint8           1 when the remaining-length label exists
endings             uint8           game-ending moves of the position: bit 0 some
                                    legal move checkmates, bit 1 some legal move
                                    stalemates, bit 7 the bits were computed
                                    (0 in rows written before layout version 2)
==================  ==============  ================================================

Sparse policies are stored with their kept probabilities renormalised to sum
to one; the fraction of (pruned) visits that did not fit in 60 entries is kept
separately. Action ids of the next policy are in the next position's own
canonical frame (its side to move), as SPEC 5 prescribes.

Version 2 added ``endings`` in the first of version 1's five padding bytes,
which were always written as zeros: the row size is unchanged and a version-1
store or snapshot is read as it is, its rows flagged "endings not computed"
(``READABLE_LAYOUTS``). A store a version-2 writer appends to is stamped
version 2 by its next header commit.
"""

from __future__ import annotations

import zlib

import numpy as np

from chesszero import core

LAYOUT_VERSION = 2
"""Version of ``ROW_DTYPE`` and of the file header; bump on any change."""

MAX_POLICY = 60
"""Most actions stored per sparse policy (SPEC 5)."""

NUM_ACTIONS = int(core.NUM_ACTIONS)
"""Size of the action space (SPEC 3, 1,880), read from the core that owns it;
the store only needs the count to size the legal bitset."""

PACKED_BYTES = int(core.PACKED_BYTES)
"""Bytes of one packed plane record (SPEC 2: 40 uint64 + 12 int8 = 332), from the core."""

LEGAL_BYTES = (NUM_ACTIONS + 7) // 8
"""Bytes of the legal-action bitset (235)."""

LENGTH_SCALE = core.LENGTH_SCALE
"""Remaining-length labels are ``plies_remaining / LENGTH_SCALE`` (SPEC 5; the core owns the scale)."""

ROW_DTYPE = np.dtype(
    [
        ("seq", "<i8"),
        ("timestamp", "<f8"),
        ("policy_probs", "<f4", (MAX_POLICY,)),
        ("next_probs", "<f4", (MAX_POLICY,)),
        ("wdl", "<f4", (3,)),
        ("root_value", "<f4"),
        ("surprise", "<f4"),
        ("policy_discarded", "<f4"),
        ("length", "<f4"),
        ("generation", "<i4"),
        ("policy_ids", "<i2", (MAX_POLICY,)),
        ("next_ids", "<i2", (MAX_POLICY,)),
        ("ply", "<i2"),
        ("planes", "u1", (PACKED_BYTES,)),
        ("legal", "u1", (LEGAL_BYTES,)),
        ("next_mask", "u1"),
        ("length_mask", "u1"),
        ("endings", "u1"),
        ("_pad", "u1", (4,)),
    ]
)
"""One replay row; ``ROW_DTYPE.itemsize`` is a multiple of 8 so every row's
8-byte fields stay aligned in the file."""

ROW_SIZE = ROW_DTYPE.itemsize


def _layout_hash(dtype: np.dtype) -> int:
    return zlib.crc32(repr(dtype.descr).encode("ascii")) & 0xFFFFFFFF


LAYOUT_HASH = _layout_hash(ROW_DTYPE)
"""Fingerprint of the row layout, written into the file header."""

ENDING_MATE = 0x01
"""``endings`` bit: some legal move of the row's position checkmates."""
ENDING_STALEMATE = 0x02
"""``endings`` bit: some legal move of the row's position stalemates."""
ENDINGS_KNOWN = 0x80
"""``endings`` bit: the two bits above were computed (set in every row materialised
since layout version 2; rows read from a version-1 file have ``endings`` 0)."""

_V1_DTYPE = np.dtype([(n, "u1", (5,)) if n == "_pad" else (n, ROW_DTYPE.fields[n][0])
                      for n in ROW_DTYPE.names if n != "endings"])
READABLE_LAYOUTS: dict[int, int] = {1: _layout_hash(_V1_DTYPE), LAYOUT_VERSION: LAYOUT_HASH}
"""Layout versions this code reads, with each one's fingerprint: version 1 rows are
version 2 rows whose ``endings`` byte is 0 (it was padding, always zero)."""


def as_current(rows: np.ndarray) -> np.ndarray:
    """``rows`` as ``ROW_DTYPE``: version-1 rows (a snapshot written before
    ``endings`` existed) are viewed in place, their ``endings`` 0; any other
    dtype raises ``TypeError``."""
    if rows.dtype == ROW_DTYPE:
        return rows
    if rows.dtype == _V1_DTYPE:
        return rows.view(ROW_DTYPE)
    raise TypeError(f"expected replay rows of layout version 1 or {LAYOUT_VERSION}, got {rows.dtype}")

assert ROW_SIZE % 8 == 0, ROW_SIZE


def empty_rows(n: int) -> np.ndarray:
    """``n`` zeroed rows with every sparse id slot set to the -1 padding."""
    if n < 0:
        raise ValueError(f"row count must be >= 0, got {n}")
    rows = np.zeros(n, dtype=ROW_DTYPE)
    rows["policy_ids"] = -1
    rows["next_ids"] = -1
    return rows


def pack_legal(actions: np.ndarray) -> np.ndarray:
    """Bitset (uint8[235]) of the given legal action ids."""
    ids = np.asarray(actions, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= NUM_ACTIONS):
        raise ValueError(f"legal action ids must lie in [0, {NUM_ACTIONS}), got {ids}")
    mask = np.zeros(LEGAL_BYTES * 8, dtype=bool)
    mask[ids] = True
    return np.packbits(mask, bitorder="little")


def unpack_legal(bits: np.ndarray) -> np.ndarray:
    """Boolean mask ``[..., 1880]`` from bitsets ``[..., 235]``."""
    arr = np.asarray(bits, dtype=np.uint8)
    if arr.shape[-1] != LEGAL_BYTES:
        raise ValueError(f"legal bitsets need a last axis of {LEGAL_BYTES}, got shape {arr.shape}")
    return np.unpackbits(arr, axis=-1, count=NUM_ACTIONS, bitorder="little").astype(bool)


def validate_rows(rows: np.ndarray, *, source: str = "rows") -> None:
    """Raise ``ValueError`` naming ``source`` when rows are not storable.

    Checks the dtype, finite values, id ranges with trailing padding, probability
    sums, WDL targets on the simplex and 0/1 masks. Runs vectorised; cheap
    compared with writing the rows.
    """
    if not isinstance(rows, np.ndarray) or rows.dtype != ROW_DTYPE:
        got = getattr(rows, "dtype", type(rows).__name__)
        raise TypeError(f"{source}: expected a numpy array of ROW_DTYPE, got {got}")
    if rows.ndim != 1:
        raise ValueError(f"{source}: expected a 1-D row array, got shape {rows.shape}")
    if len(rows) == 0:
        return
    problems: list[str] = []

    def check(ok: np.ndarray, what: str) -> None:
        bad = np.flatnonzero(~np.asarray(ok))
        if bad.size:
            problems.append(f"{what} (first bad row {int(bad[0])}, {bad.size} rows)")

    floats = ("timestamp", "root_value", "surprise", "policy_discarded", "length")
    for name in floats:
        check(np.isfinite(rows[name]), f"non-finite {name}")
    check(np.isfinite(rows["wdl"]).all(axis=1), "non-finite wdl")
    check((rows["wdl"] >= 0).all(axis=1) & (np.abs(rows["wdl"].sum(axis=1) - 1) < 1e-3),
          "wdl not a probability vector")
    check(np.abs(rows["root_value"]) <= 1 + 1e-5, "root_value outside [-1, 1]")
    check(rows["surprise"] >= 0, "negative surprise")
    check((rows["policy_discarded"] >= 0) & (rows["policy_discarded"] <= 1),
          "policy_discarded outside [0, 1]")
    for mask in ("next_mask", "length_mask"):
        check(rows[mask] <= 1, f"{mask} not 0/1")
    for ids, probs, required in (("policy_ids", "policy_probs", None),
                                 ("next_ids", "next_probs", "next_mask")):
        idv, pv = rows[ids], rows[probs]
        present = idv >= 0
        check(((idv >= -1) & (idv < NUM_ACTIONS)).all(axis=1), f"{ids} outside [-1, {NUM_ACTIONS})")
        srt = np.sort(idv, axis=1)
        check(~((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any(axis=1), f"{ids} repeated")
        # padding only at the end: once an entry is -1, all later ones are too
        check((np.diff(present.astype(np.int8), axis=1) <= 0).all(axis=1), f"{ids} padding not trailing")
        check(np.isfinite(pv).all(axis=1) & (pv >= 0).all(axis=1), f"{probs} negative or non-finite")
        check(~(~present & (pv != 0)).any(axis=1), f"{probs} non-zero on padding")
        sums = pv.sum(axis=1)
        need = np.ones(len(rows), dtype=bool) if required is None else rows[required] == 1
        check(~need | (np.abs(sums - 1) < 1e-3), f"{probs} do not sum to 1")
        check(need | (sums == 0), f"{probs} set without its mask")
    check(rows["length_mask"].astype(bool) | (rows["length"] == 0), "length set without its mask")
    endings = rows["endings"]
    check((endings & ~np.uint8(ENDINGS_KNOWN | ENDING_MATE | ENDING_STALEMATE)) == 0,
          "endings has unknown bits")
    check(((endings & ENDINGS_KNOWN) != 0) | (endings == 0), "endings bits set without the known bit")
    if problems:
        raise ValueError(f"{source}: invalid replay rows: " + "; ".join(problems))
