"""``ReplayStore``: the preallocated, memory-mapped replay ring (SPEC 7).

One file holds a versioned double-buffered header, a float32 priority column
(policy surprise per slot, so samplers never scan the rows) and ``capacity``
fixed-size rows (``layout.ROW_DTYPE``); see ``header`` for the byte layout and
the ring arithmetic.

Durable admission. Each ``append`` call is atomic as a whole, whatever its
size: after a crash either every row of the call is admitted or none is. It
takes three steps:

1. if the call will overwrite valid rows, commit a header that drops exactly
   those oldest rows (``size`` shrinks, ``total_appended`` does not move) and
   flush it;
2. write all the rows and their priorities (in pieces of
   ``WRITE_CHUNK_ROWS``, to bound temporary memory) and flush them (``msync``);
3. commit one header that advances ``head``, ``size`` and ``total_appended``
   by the whole call.

Rows are visible (to sampling, reading and training credit) only after step 3.
A process killed anywhere leaves the newest valid header describing rows that
are all intact: rows of an unfinished call are outside it, and the rows they
overwrite left it in step 1. Header commits alternate between the two slots,
so a torn header write falls back to the previous one. So a caller that
records ``total_appended`` before an append knows after any crash whether the
call happened: ``total_appended`` is either unchanged or advanced by exactly
the call's row count (exactly-once ingest, see ``convert.convert_shard``).

A call with more rows than the logical capacity ``L`` behaves like the same
rows appended one by one: ``total_appended`` advances by all of them, and only
the newest ``L`` are kept (and written).

Readers in other processes open the file read-only, call ``refresh`` to adopt
the newest header, and ``read`` rows: a read copies the rows, then re-reads the
header and raises ``StaleRowsError`` if any copied row was evicted (and so may
have been overwritten while being copied); no torn row is ever returned.
One writer at a time is enforced with an exclusive ``flock``.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from chesszero.fsio import fsync_dir
from chesszero.replay.header import (
    HEADER_BYTES,
    PAGE,
    SLOT_BYTES,
    ReplayFormatError,
    StoreHeader,
    decode_header,
    file_bytes,
    rows_offset,
)
from chesszero.replay.layout import ROW_DTYPE, ROW_SIZE, validate_rows
from chesszero.replay.rows import RowBatch

__all__ = ["ReplayStore", "ReplayFormatError", "ReplayLockedError", "StaleRowsError"]


WRITE_CHUNK_ROWS = 4096
"""Rows copied, stamped and flushed at a time inside one (atomic) append."""


class ReplayLockedError(RuntimeError):
    """Another process already has the store open for writing."""


class StaleRowsError(RuntimeError):
    """Some requested rows were evicted before or while they were read."""

    def __init__(self, path: Path, slots: np.ndarray) -> None:
        self.slots = slots
        super().__init__(f"{path}: {len(slots)} requested rows were evicted or are not valid "
                         f"(slots {slots[:8].tolist()}...); refresh and sample again")


class ReplayStore:
    """The replay ring file. Build with ``create`` or ``open``, never directly."""

    def __init__(self, path: Path, fd: int, mm: mmap.mmap, header: StoreHeader, slot: int,
                 readonly: bool) -> None:
        self.path = path
        self.readonly = readonly
        self._fd = fd
        self._mm = mm
        self._header = header
        self._slot = slot
        cap = header.capacity
        self._prio = np.frombuffer(mm, dtype="<f4", count=cap, offset=HEADER_BYTES)
        self._rows = np.frombuffer(mm, dtype=ROW_DTYPE, count=cap, offset=rows_offset(cap))

    # ------------------------------------------------------------ lifecycle
    @classmethod
    def create(cls, path: str | os.PathLike[str], *, capacity: int,
               logical_capacity: int | None = None, total_appended: int = 0) -> ReplayStore:
        """Preallocate a new store file of ``capacity`` rows and open it for writing.

        The file is built under a temporary name and renamed into place, so a
        crash never leaves a half-initialised store at ``path``. A non-zero
        ``total_appended`` starts the (empty) store as if that many rows had
        been appended and evicted, so the next row gets that ``seq`` (used by
        ``snapshot.restore_store`` to keep append indices across a restore).
        """
        path = Path(path)
        logical = capacity if logical_capacity is None else logical_capacity
        if capacity <= 0 or not 0 < logical <= capacity:
            raise ValueError(f"{path}: need 0 < logical_capacity ({logical}) <= capacity ({capacity})")
        if total_appended < 0:
            raise ValueError(f"{path}: total_appended must be >= 0, got {total_appended}")
        if path.exists():
            raise FileExistsError(f"{path}: replay store already exists; open it or remove it first")
        header = StoreHeader(capacity=capacity, logical_capacity=logical, head=0, size=0,
                             total_appended=total_appended, sequence=1)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                os.posix_fallocate(fd, 0, file_bytes(capacity))
            except OSError as exc:  # filesystems without fallocate: sparse file
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise
                os.ftruncate(fd, file_bytes(capacity))
            os.pwrite(fd, header.encode(), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, path)
        fsync_dir(path.parent)
        return cls.open(path)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, readonly: bool = False) -> ReplayStore:
        """Open an existing store; writers take an exclusive lock.

        Raises ``ReplayFormatError`` (a ``ValueError``) naming the file when the
        header is missing, corrupt, of another layout version or inconsistent
        with the file size, and ``ReplayLockedError`` when another writer is open.
        """
        path = Path(path)
        fd = os.open(path, os.O_RDONLY if readonly else os.O_RDWR)
        try:
            if not readonly:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise ReplayLockedError(f"{path}: another process has this replay store "
                                            "open for writing") from None
            size = os.fstat(fd).st_size
            header, slot = decode_header(os.pread(fd, HEADER_BYTES, 0), path)
            if size != file_bytes(header.capacity):
                raise ReplayFormatError(f"{path}: file is {size} bytes, a store of capacity "
                                        f"{header.capacity} needs {file_bytes(header.capacity)}")
            access = mmap.ACCESS_READ if readonly else mmap.ACCESS_WRITE
            mm = mmap.mmap(fd, size, access=access)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, mm, header, slot, readonly)

    def close(self) -> None:
        """Unmap and close (releases the writer lock). Idempotent."""
        if self._fd < 0:
            return
        del self._prio, self._rows
        self._mm.close()
        os.close(self._fd)
        self._fd = -1

    def __enter__(self) -> ReplayStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        h = self._header
        mode = "r" if self.readonly else "w"
        return (f"ReplayStore({str(self.path)!r}, mode={mode}, size={h.size}, "
                f"logical_capacity={h.logical_capacity}, capacity={h.capacity}, "
                f"total_appended={h.total_appended})")

    # ------------------------------------------------------------ state
    @property
    def header(self) -> StoreHeader:
        """The committed state this handle currently sees (frozen snapshot)."""
        return self._header

    @property
    def capacity(self) -> int:
        return self._header.capacity

    @property
    def logical_capacity(self) -> int:
        return self._header.logical_capacity

    @property
    def size(self) -> int:
        return self._header.size

    @property
    def total_appended(self) -> int:
        return self._header.total_appended

    def _read_header(self) -> tuple[StoreHeader, int]:
        return decode_header(self._mm[:HEADER_BYTES], self.path)

    def refresh(self) -> bool:
        """Adopt the newest committed header; True if it changed."""
        self._check_open()
        if not self.readonly:
            return False  # the writer's own header is always the newest
        header, slot = self._read_header()
        changed = header.sequence != self._header.sequence
        self._header, self._slot = header, slot
        return changed

    # ------------------------------------------------------------ writing
    def _writable(self) -> None:
        self._check_open()
        if self.readonly:
            raise PermissionError(f"{self.path}: store was opened read-only")

    def _check_open(self) -> None:
        if self._fd < 0:
            raise ValueError(f"{self.path}: replay store is closed")

    def _flush(self, start: int, stop: int) -> None:
        lo = start - start % PAGE
        self._mm.flush(lo, stop - lo)

    def _commit(self, header: StoreHeader) -> None:
        slot = 1 - self._slot
        off = slot * SLOT_BYTES
        self._mm[off:off + SLOT_BYTES] = header.encode()
        self._flush(off, off + SLOT_BYTES)
        self._header, self._slot = header, slot

    def set_logical_capacity(self, logical_capacity: int) -> None:
        """Grow the ring to ``logical_capacity`` rows (no reallocation, no eviction)."""
        self._writable()
        h = self._header
        if logical_capacity < h.logical_capacity:
            raise ValueError(f"{self.path}: logical capacity can only grow "
                             f"({h.logical_capacity} -> {logical_capacity} requested)")
        if logical_capacity > h.capacity:
            raise ValueError(f"{self.path}: logical capacity {logical_capacity} exceeds the "
                             f"preallocated capacity {h.capacity}")
        if logical_capacity == h.logical_capacity:
            return
        grown = h.grown(logical_capacity)
        self._commit(replace(grown, sequence=h.sequence + 1))

    def append(self, rows: np.ndarray) -> int:
        """Durably and atomically admit ``rows`` (``ROW_DTYPE``); returns the new
        ``total_appended``.

        All rows of the call become visible together, or (after a crash) none
        does; see the module docstring. The ``seq`` field is stamped by the
        store. Invalid rows raise ``ValueError`` before anything is written.
        An append evicts as many of the oldest rows as it needs room for, all
        at once: a reader sampling from an older header may then find its rows
        stale (``StoreSampler`` replaces them).
        """
        self._writable()
        validate_rows(rows, source=f"append to {self.path}")
        n = len(rows)
        h = self._header
        if n == 0:
            return h.total_appended
        keep = min(n, h.logical_capacity)            # rows that will still be valid
        evict = max(0, h.size + keep - h.logical_capacity)
        if evict:
            h = replace(h, size=h.size - evict, sequence=h.sequence + 1)
            self._commit(h)
        first = h.total_appended + n - keep          # append index of the first kept row
        base = rows_offset(h.capacity)
        for lo in range(0, keep, WRITE_CHUNK_ROWS):
            hi = min(lo + WRITE_CHUNK_ROWS, keep)
            out = rows[n - keep + lo:n - keep + hi].copy()
            out["seq"] = np.arange(first + lo, first + hi, dtype=np.int64)
            slots = h.append_to_slot(out["seq"])
            runs = _runs(slots)
            for a, b, at in runs:
                self._rows[a:b] = out[at:at + b - a]
                self._prio[a:b] = out["surprise"][at:at + b - a]
            for a, b, _ in runs:
                self._flush(HEADER_BYTES + 4 * a, HEADER_BYTES + 4 * b)
                self._flush(base + a * ROW_SIZE, base + b * ROW_SIZE)
        self._commit(replace(h, head=(h.head + n) % h.logical_capacity, size=h.size + keep,
                             total_appended=h.total_appended + n, sequence=h.sequence + 1))
        return self._header.total_appended

    # ------------------------------------------------------------ reading
    def priorities(self, slots: np.ndarray) -> np.ndarray:
        """Stored policy surprise of physical ``slots`` (float32 copy)."""
        self._check_open()
        return self._prio[self._check_slots(slots)].copy()

    def _check_slots(self, slots: np.ndarray) -> np.ndarray:
        s = np.asarray(slots, dtype=np.int64)
        if s.size and (s.min() < 0 or s.max() >= self._header.capacity):
            raise IndexError(f"{self.path}: slots must lie in [0, {self._header.capacity})")
        return s

    def read(self, slots: np.ndarray) -> RowBatch:
        """Copy the rows at physical ``slots`` (valid in this handle's header).

        Raises ``StaleRowsError`` if a slot holds no valid row in the current
        header, or its row was evicted by the time the copy finished.
        """
        s = self._check_slots(slots)
        return RowBatch.from_rows(self.read_rows(s), s)

    def read_rows(self, slots: np.ndarray) -> np.ndarray:
        """Like ``read``, but the raw ``ROW_DTYPE`` records (a copy)."""
        self._check_open()
        s = self._check_slots(slots)
        before = self._header
        expected = before.slot_to_append(s)
        rows = self._rows[s]
        after = self._read_header()[0] if self.readonly else self._header
        ok = (expected >= after.oldest) & (rows["seq"] == expected)
        if not ok.all():
            raise StaleRowsError(self.path, s[~ok])
        return rows

    def read_valid(self, *, oldest_first: bool = True) -> RowBatch:
        """All valid rows (for snapshots, analysis and tests)."""
        slots = self._header.valid_slots()
        return self.read(slots if oldest_first else slots[::-1])


def _runs(slots: np.ndarray) -> list[tuple[int, int, int]]:
    """Split ascending-by-one stretches of ``slots``: (first, stop, offset in slots)."""
    if slots.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(slots) != 1) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [slots.size]))
    return [(int(slots[i]), int(slots[j - 1]) + 1, int(i)) for i, j in zip(starts, stops, strict=True)]
