"""Versioned header of the replay ring file, and the ring's slot arithmetic.

File layout (all offsets in bytes, little-endian)::

    [0, 4096)            header slot A
    [4096, 8192)         header slot B
    [8192, 8192 + P)     priority column: float32 surprise per physical slot,
                         P = 4 * capacity rounded up to 4096
    [8192 + P, ...)      capacity rows of ROW_DTYPE

The two header slots are written alternately (double buffering); each carries a
sequence number and a CRC32 of its bytes, and readers take the newest slot that
validates, so a write torn by a crash leaves the previous header in force.

Ring: the ``logical_capacity`` physical slots in use form a cycle described by
``segments`` (start slot, length) in ring order. It is the single segment
``[0, L)`` unless the capacity grew while the ring had wrapped: then the fresh
slots are spliced in at the write position, so growth evicts nothing and the
oldest rows are still the next ones overwritten. ``head`` is the ring position
of the next write; the ``size`` valid rows sit at ring positions
``head - size .. head - 1`` (mod L), the newest just before ``head``. A row's
*age* is 0 for the newest valid row.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from chesszero.replay.layout import LAYOUT_HASH, LAYOUT_VERSION, READABLE_LAYOUTS, ROW_SIZE

MAGIC = b"CZREPLAY"
SLOT_BYTES = 4096
HEADER_BYTES = 2 * SLOT_BYTES
PAGE = 4096
MAX_SEGMENTS = 64

HEADER_DTYPE = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("row_size", "<u4"),
        ("layout_hash", "<u4"),
        ("n_segments", "<u4"),
        ("capacity", "<u8"),
        ("logical_capacity", "<u8"),
        ("head", "<u8"),
        ("size", "<u8"),
        ("total_appended", "<u8"),
        ("sequence", "<u8"),
        ("segments", "<u8", (MAX_SEGMENTS, 2)),
        ("checksum", "<u4"),
    ]
)
_CHECKED_BYTES = HEADER_DTYPE.fields["checksum"][1]
assert HEADER_DTYPE.itemsize <= SLOT_BYTES


class ReplayFormatError(ValueError):
    """The file is not a readable replay store of this layout version."""


def priority_bytes(capacity: int) -> int:
    """Bytes reserved for the priority column, page aligned."""
    return -(-4 * capacity // PAGE) * PAGE


def rows_offset(capacity: int) -> int:
    """File offset of row slot 0."""
    return HEADER_BYTES + priority_bytes(capacity)


def file_bytes(capacity: int) -> int:
    """Total file size of a store with ``capacity`` physical slots."""
    return rows_offset(capacity) + capacity * ROW_SIZE


@dataclass(frozen=True)
class StoreHeader:
    """One committed state of the store (see the module docstring)."""

    capacity: int
    logical_capacity: int
    head: int
    size: int
    total_appended: int
    sequence: int
    segments: tuple[tuple[int, int], ...] = field(default=())

    def __post_init__(self) -> None:
        segs = self.segments or ((0, self.logical_capacity),)
        object.__setattr__(self, "segments", tuple((int(a), int(n)) for a, n in segs))
        problems = []
        if not 0 < self.logical_capacity <= self.capacity:
            problems.append(f"logical capacity {self.logical_capacity} not in (0, {self.capacity}]")
        if not 0 <= self.size <= self.logical_capacity:
            problems.append(f"size {self.size} not in [0, {self.logical_capacity}]")
        if not 0 <= self.head < max(self.logical_capacity, 1):
            problems.append(f"head {self.head} not in [0, {self.logical_capacity})")
        if self.total_appended < self.size:
            problems.append(f"total appended {self.total_appended} < size {self.size}")
        if not 0 < len(self.segments) <= MAX_SEGMENTS:
            problems.append(f"{len(self.segments)} ring segments")
        covered = sorted(self.segments)
        expect = 0
        for start, length in covered:
            if start != expect or length <= 0:
                problems.append(f"ring segments {self.segments} do not tile [0, L)")
                break
            expect = start + length
        if expect != self.logical_capacity and not problems:
            problems.append(f"ring segments {self.segments} do not tile [0, {self.logical_capacity})")
        if problems:
            raise ReplayFormatError("inconsistent replay header: " + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (e.g. to broadcast rank 0's view to the other ranks)."""
        return {**asdict(self), "segments": [list(s) for s in self.segments]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoreHeader:
        try:
            return cls(**{**data, "segments": tuple(tuple(s) for s in data["segments"])})
        except (KeyError, TypeError) as exc:
            raise ReplayFormatError(f"invalid store header data: {exc}") from exc

    # ---------------------------------------------------------------- ring math
    @property
    def oldest(self) -> int:
        """Append index of the oldest valid row."""
        return self.total_appended - self.size

    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        segs = np.asarray(self.segments, dtype=np.int64)
        cum = np.concatenate(([0], np.cumsum(segs[:, 1])))
        return segs, cum

    def ring_to_slot(self, positions: np.ndarray) -> np.ndarray:
        """Physical slots of ring positions (any integers, taken mod L)."""
        pos = np.asarray(positions, dtype=np.int64) % self.logical_capacity
        if len(self.segments) == 1:
            return pos + self.segments[0][0]
        segs, cum = self._tables()
        i = np.searchsorted(cum, pos, side="right") - 1
        return segs[i, 0] + (pos - cum[i])

    def append_to_slot(self, indices: np.ndarray) -> np.ndarray:
        """Physical slots of append indices, in the current ring layout."""
        idx = np.asarray(indices, dtype=np.int64)
        return self.ring_to_slot(self.head - (self.total_appended - idx))

    def age_to_slot(self, ages: np.ndarray) -> np.ndarray:
        """Physical slots of valid rows by age (0 = newest)."""
        return self.append_to_slot(self.total_appended - 1 - np.asarray(ages, dtype=np.int64))

    def slot_to_append(self, slots: np.ndarray) -> np.ndarray:
        """Append index of the valid row in each physical slot, -1 where none."""
        s = np.asarray(slots, dtype=np.int64)
        segs, cum = self._tables()
        order = np.argsort(segs[:, 0])
        starts = segs[order, 0]
        i = order[np.clip(np.searchsorted(starts, s, side="right") - 1, 0, None)]
        pos = cum[i] + (s - segs[i, 0])
        inside = (s >= 0) & (s < self.logical_capacity)
        age = (self.head - 1 - pos) % self.logical_capacity
        valid = inside & (age < self.size)
        return np.where(valid, self.total_appended - 1 - age, -1)

    def valid_slots(self) -> np.ndarray:
        """Physical slots of all valid rows, oldest first."""
        return self.append_to_slot(np.arange(self.oldest, self.total_appended, dtype=np.int64))

    # ---------------------------------------------------------------- updates
    def grown(self, logical_capacity: int) -> StoreHeader:
        """This state with the ring grown to ``logical_capacity`` (no data moves).

        The fresh physical slots ``[L, L')`` are spliced in at the write position,
        so they are written next and the oldest rows keep their eviction order.
        """
        old = self.logical_capacity
        delta = logical_capacity - old
        if delta == 0:
            return self
        segs = list(self.segments)
        fresh = (old, delta)
        if self.head == 0:
            segs.append(fresh)  # ring position 0 and L are the same cut
            head = old
        else:
            _, cum = self._tables()
            i = int(np.searchsorted(cum, self.head, side="right") - 1)
            start, length = segs[i]
            offset = self.head - int(cum[i])
            pieces = [(start, offset), fresh, (start + offset, length - offset)]
            segs[i:i + 1] = [p for p in pieces if p[1] > 0]
            head = self.head
        merged: list[tuple[int, int]] = []
        for start, length in segs:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((start, length))
        if len(merged) > MAX_SEGMENTS:
            raise ValueError(
                f"growing the ring to {logical_capacity} would need {len(merged)} segments "
                f"(at most {MAX_SEGMENTS}); grow less often or while the ring has not wrapped")
        return replace(self, logical_capacity=logical_capacity, head=head % logical_capacity,
                       segments=tuple(merged))

    # ---------------------------------------------------------------- codec
    def encode(self) -> bytes:
        """Slot bytes with magic, layout fingerprint and checksum."""
        rec = np.zeros((), dtype=HEADER_DTYPE)
        rec["magic"] = MAGIC
        rec["version"] = LAYOUT_VERSION
        rec["row_size"] = ROW_SIZE
        rec["layout_hash"] = LAYOUT_HASH
        rec["n_segments"] = len(self.segments)
        for name in ("capacity", "logical_capacity", "head", "size", "total_appended", "sequence"):
            rec[name] = getattr(self, name)
        rec["segments"][: len(self.segments)] = self.segments
        raw = bytearray(rec.tobytes())
        crc = zlib.crc32(bytes(raw[:_CHECKED_BYTES])) & 0xFFFFFFFF
        raw[_CHECKED_BYTES:_CHECKED_BYTES + 4] = crc.to_bytes(4, "little")
        return bytes(raw).ljust(SLOT_BYTES, b"\0")


def decode_slot(raw: bytes) -> tuple[StoreHeader | None, str]:
    """Parse one header slot: (header, "") or (None, why it is unusable)."""
    rec = np.frombuffer(raw[: HEADER_DTYPE.itemsize], dtype=HEADER_DTYPE)[0]
    if bytes(rec["magic"]) != MAGIC:
        return None, "bad magic (not a chesszero replay store)"
    crc = zlib.crc32(bytes(raw[:_CHECKED_BYTES])) & 0xFFFFFFFF
    if crc != int(rec["checksum"]):
        return None, "header checksum mismatch (corrupt or torn header)"
    version = int(rec["version"])
    if version not in READABLE_LAYOUTS:
        return None, (f"layout version {version}, this code reads "
                      f"{' and '.join(map(str, sorted(READABLE_LAYOUTS)))}")
    if int(rec["row_size"]) != ROW_SIZE or int(rec["layout_hash"]) != READABLE_LAYOUTS[version]:
        return None, (f"row layout differs (row size {int(rec['row_size'])}, this code uses "
                      f"{ROW_SIZE}; layout hash {int(rec['layout_hash'])} vs "
                      f"{READABLE_LAYOUTS[version]} for version {version})")
    n = int(rec["n_segments"])
    if not 0 < n <= MAX_SEGMENTS:
        return None, f"{n} ring segments"
    try:
        header = StoreHeader(
            capacity=int(rec["capacity"]), logical_capacity=int(rec["logical_capacity"]),
            head=int(rec["head"]), size=int(rec["size"]),
            total_appended=int(rec["total_appended"]), sequence=int(rec["sequence"]),
            segments=tuple((int(a), int(b)) for a, b in rec["segments"][:n]))
    except ReplayFormatError as exc:
        return None, str(exc)
    return header, ""


def decode_header(raw: bytes, path: Path | str) -> tuple[StoreHeader, int]:
    """Newest valid header from the two slots in ``raw``, and its slot index.

    Raises ``ReplayFormatError`` naming ``path`` when neither slot is usable.
    """
    if len(raw) < HEADER_BYTES:
        raise ReplayFormatError(f"{path}: file too short for a replay header ({len(raw)} bytes)")
    found = [decode_slot(raw[i * SLOT_BYTES:(i + 1) * SLOT_BYTES]) for i in range(2)]
    valid = [(h, i) for i, (h, _) in enumerate(found) if h is not None]
    if not valid:
        reasons = "; ".join(f"slot {'AB'[i]}: {why}" for i, (_, why) in enumerate(found))
        raise ReplayFormatError(f"{path}: no valid replay header ({reasons})")
    return max(valid, key=lambda hv: hv[0].sequence)
