"""Replay snapshots: a store's valid rows as a versioned folder, and DVC tracking.

A snapshot is a folder (e.g. ``data/replay/snapshots/<campaign>/gen_0003``)
holding exactly two files:

- ``rows.npy``: the store's valid rows, oldest first, as a standard NumPy
  ``.npy`` array of the structured ``layout.ROW_DTYPE`` (loadable with
  ``numpy.load(..., allow_pickle=False)``; rows keep their ``seq`` stamps);
- ``meta.json``: ``format`` (``"chesszero-replay-snapshot"``), the snapshot
  format version, the row layout version, row size and layout hash, the row
  dtype description, the store header it was taken from (capacity, logical
  capacity, head, size, total appended, sequence, ring segments), the row
  count, the first and last ``seq``, and the byte size and SHA-256 of
  ``rows.npy``.

The content is a deterministic function of the store's valid rows and header
(no wall-clock time inside), so the same store state gives byte-identical
snapshots and DVC deduplicates them. ``write_snapshot`` builds the folder under
a temporary name and renames it into place: a crash never leaves a partial
snapshot at the final path. ``read_snapshot`` checks the version, layout,
checksum and ``seq`` continuity and names the offending file on any error.
``restore_store`` rebuilds a store file with the same logical capacity, the
same ``total_appended`` and the same rows (and ``seq``) in the same order;
physical slots may differ, so sampler state does not carry over.

``dvc_track(path, repo_root)`` runs ``dvc add`` on a snapshot and, when the
DVC project has a default remote, ``dvc push``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from chesszero.fsio import fsync_dir
from chesszero.replay.header import ReplayFormatError, StoreHeader
from chesszero.replay.layout import (
    LAYOUT_HASH,
    LAYOUT_VERSION,
    READABLE_LAYOUTS,
    ROW_DTYPE,
    ROW_SIZE,
    as_current,
)
from chesszero.replay.store import ReplayStore

__all__ = ["DvcError", "DvcTrackResult", "SnapshotError", "SnapshotInfo", "dvc_track",
           "dvc_push", "read_snapshot", "read_snapshot_info", "restore_store", "write_snapshot"]

FORMAT = "chesszero-replay-snapshot"
SNAPSHOT_VERSION = 1
"""Version of the snapshot folder format (files and ``meta.json`` keys)."""

ROWS_FILE = "rows.npy"
META_FILE = "meta.json"
_CHUNK_ROWS = 8192
_HASH_BLOCK = 1 << 22


class SnapshotError(ValueError):
    """A snapshot folder that cannot be read or restored (message names the file)."""


class DvcError(RuntimeError):
    """A DVC command failed (message names the command, folder and DVC's output)."""


@dataclass(frozen=True)
class SnapshotInfo:
    """What a snapshot holds (the content of ``meta.json``) and where it is."""

    path: Path                 # the snapshot folder
    rows: int
    first_seq: int             # seq of the oldest row (== header total_appended - size)
    total_appended: int
    header: StoreHeader        # the store state the snapshot was taken from
    rows_bytes: int            # size of rows.npy
    sha256: str                # of rows.npy
    layout_version: int = LAYOUT_VERSION
    snapshot_version: int = SNAPSHOT_VERSION

    def to_meta(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "snapshot_version": self.snapshot_version,
            "layout_version": self.layout_version,
            "row_size": ROW_SIZE,
            "layout_hash": LAYOUT_HASH,
            "row_dtype": [list(_jsonable(f)) for f in ROW_DTYPE.descr],
            "rows_file": ROWS_FILE,
            "rows": self.rows,
            "first_seq": self.first_seq,
            "last_seq": self.first_seq + self.rows - 1,
            "total_appended": self.total_appended,
            "header": self.header.to_dict(),
            "rows_bytes": self.rows_bytes,
            "sha256": self.sha256,
        }


def _jsonable(field: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(list(x) if isinstance(x, tuple) else x for x in field)


# ---------------------------------------------------------------------------- writing
class _HashingWriter:
    """A binary file wrapper that hashes and counts what goes through it."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.hash = hashlib.sha256()
        self.bytes = 0

    def write(self, data: bytes | np.ndarray) -> int:
        self.hash.update(data)
        self.bytes += data.nbytes if isinstance(data, np.ndarray) else len(data)
        return self.fh.write(data)


def write_snapshot(store: ReplayStore, out_dir: str | os.PathLike[str]) -> SnapshotInfo:
    """Write ``store``'s valid rows (oldest first) as a snapshot folder ``out_dir``.

    ``out_dir`` must not exist (its parent folders are created). A read-only
    handle adopts the newest header first; if a concurrent writer evicts rows
    while they are copied, ``StaleRowsError`` is raised and nothing is left at
    ``out_dir`` (snapshot from the writer, or between appends). Rows are
    streamed in pieces, so memory stays small whatever the store size.
    """
    out = Path(out_dir)
    if out.exists():
        raise FileExistsError(f"{out}: snapshot folder already exists; snapshots are immutable")
    if store.readonly:
        store.refresh()
    header = store.header
    slots = header.valid_slots()
    n = int(slots.size)
    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in out.parent.glob(f".{out.name}.*.tmp"):  # a writer killed mid-copy (one writer per snapshot)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.mkdir()
    try:
        with open(tmp / ROWS_FILE, "wb") as fh:
            writer = _HashingWriter(fh)
            np.lib.format.write_array_header_1_0(
                writer, {"descr": np.lib.format.dtype_to_descr(ROW_DTYPE),
                         "fortran_order": False, "shape": (n,)})
            for lo in range(0, n, _CHUNK_ROWS):
                rows = store.read_rows(slots[lo:lo + _CHUNK_ROWS])
                writer.write(rows.view(np.uint8))
            fh.flush()
            os.fsync(fh.fileno())
        info = SnapshotInfo(path=out, rows=n, first_seq=header.oldest,
                            total_appended=header.total_appended, header=header,
                            rows_bytes=writer.bytes, sha256=writer.hash.hexdigest())
        meta = json.dumps(info.to_meta(), indent=2, sort_keys=True) + "\n"
        with open(tmp / META_FILE, "w", encoding="utf-8") as fh:
            fh.write(meta)
            fh.flush()
            os.fsync(fh.fileno())
        fsync_dir(tmp)
        os.rename(tmp, out)  # fails if out appeared meanwhile (non-empty folder)
        fsync_dir(out.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info


# ---------------------------------------------------------------------------- reading
def read_snapshot_info(snapshot_dir: str | os.PathLike[str]) -> SnapshotInfo:
    """Parse and check ``meta.json`` (format, versions, layout); no row is read."""
    folder = Path(snapshot_dir)
    meta_path = folder / META_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SnapshotError(f"{meta_path}: missing; {folder} is not a replay snapshot") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{meta_path}: unreadable snapshot metadata ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SnapshotError(f"{meta_path}: not a chesszero replay snapshot "
                            f"(format {meta.get('format') if isinstance(meta, dict) else None!r})")
    if meta.get("snapshot_version") != SNAPSHOT_VERSION:
        raise SnapshotError(f"{meta_path}: snapshot format version {meta.get('snapshot_version')}, "
                            f"this code reads {SNAPSHOT_VERSION}")
    version = meta.get("layout_version")
    if not isinstance(version, int) or version not in READABLE_LAYOUTS or meta.get("row_size") != ROW_SIZE \
            or meta.get("layout_hash") != READABLE_LAYOUTS[version]:
        raise SnapshotError(
            f"{meta_path}: row layout version {version} (row size "
            f"{meta.get('row_size')}, hash {meta.get('layout_hash')}), this code reads versions "
            f"{' and '.join(map(str, sorted(READABLE_LAYOUTS)))} (row size {ROW_SIZE}, version "
            f"{LAYOUT_VERSION} hash {LAYOUT_HASH})")
    try:
        header = StoreHeader.from_dict(meta["header"])
        info = SnapshotInfo(path=folder, rows=int(meta["rows"]), first_seq=int(meta["first_seq"]),
                            total_appended=int(meta["total_appended"]), header=header,
                            rows_bytes=int(meta["rows_bytes"]), sha256=str(meta["sha256"]),
                            layout_version=int(version))
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"{meta_path}: invalid snapshot metadata ({exc})") from exc
    if info.rows != header.size or info.total_appended != header.total_appended \
            or info.first_seq != header.oldest:
        raise SnapshotError(f"{meta_path}: row count {info.rows} / seq range disagree with the "
                            f"recorded store header (size {header.size}, total appended "
                            f"{header.total_appended})")
    return info


def _sha256(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(_HASH_BLOCK):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def read_snapshot(snapshot_dir: str | os.PathLike[str], *, mmap: bool = False) -> np.ndarray:
    """The snapshot's rows (``ROW_DTYPE``, oldest first, ``seq`` kept).

    Checks the metadata (``read_snapshot_info``), the SHA-256 and size of
    ``rows.npy``, its dtype and row count, and that ``seq`` runs contiguously
    from ``first_seq``; raises ``SnapshotError`` naming the file otherwise.
    ``RowBatch.from_rows(rows, slots)`` turns them into a ``RowBatch`` and
    ``ReplayStore.append`` takes them as they are. With ``mmap=True`` the rows
    are memory-mapped read-only instead of loaded.
    """
    info = read_snapshot_info(snapshot_dir)
    rows_path = info.path / ROWS_FILE
    if not rows_path.is_file():
        raise SnapshotError(f"{rows_path}: missing from the snapshot")
    digest, size = _sha256(rows_path)
    if size != info.rows_bytes or digest != info.sha256:
        raise SnapshotError(f"{rows_path}: checksum mismatch (sha256 {digest}, {size} bytes; "
                            f"meta.json records {info.sha256}, {info.rows_bytes} bytes): "
                            "corrupt or incomplete snapshot")
    try:
        rows = np.load(rows_path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"{rows_path}: unreadable row array ({exc})") from exc
    if info.layout_version == 1 and rows.dtype != ROW_DTYPE:
        try:  # a version-1 snapshot's rows, viewed with ``endings`` 0 (not computed)
            rows = as_current(rows)
        except TypeError as exc:
            raise SnapshotError(f"{rows_path}: {exc}") from exc
    if rows.dtype != ROW_DTYPE or rows.shape != (info.rows,):
        raise SnapshotError(f"{rows_path}: holds {rows.shape} of {rows.dtype}, expected "
                            f"({info.rows},) replay rows of layout version {info.layout_version}")
    expect = np.arange(info.first_seq, info.first_seq + info.rows, dtype=np.int64)
    if not np.array_equal(rows["seq"], expect):
        raise SnapshotError(f"{rows_path}: row seq stamps are not {info.first_seq}.."
                            f"{info.first_seq + info.rows - 1} in order")
    return rows


def restore_store(snapshot_dir: str | os.PathLike[str], store_path: str | os.PathLike[str], *,
                  capacity: int | None = None) -> ReplayStore:
    """Build a new store at ``store_path`` from a snapshot; returns it open for writing.

    The store gets the snapshot's logical capacity, its ``total_appended`` and
    its rows with their ``seq`` stamps, so credit ledgers and ingest journals
    keyed on ``total_appended`` stay valid. ``capacity`` (the preallocated
    size) defaults to the original store's. The file is built under a
    temporary name and renamed into place; ``store_path`` must not exist.
    """
    path = Path(store_path)
    if path.exists():
        raise FileExistsError(f"{path}: replay store already exists; restore to a new path")
    info = read_snapshot_info(snapshot_dir)
    rows = read_snapshot(snapshot_dir, mmap=True)
    h = info.header
    cap = h.capacity if capacity is None else capacity
    if cap < h.logical_capacity:
        raise ValueError(f"{path}: capacity {cap} is below the snapshot's logical capacity "
                         f"{h.logical_capacity}")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.restore")
    tmp.unlink(missing_ok=True)
    try:
        with ReplayStore.create(tmp, capacity=cap, logical_capacity=h.logical_capacity,
                                total_appended=info.first_seq) as store:
            if len(rows):
                store.append(np.asarray(rows))
            if store.total_appended != info.total_appended:
                raise ReplayFormatError(f"{path}: restored {store.total_appended} rows in total, "
                                        f"snapshot says {info.total_appended}")
        if path.exists():
            raise FileExistsError(f"{path}: replay store appeared during the restore")
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ReplayStore.open(path)


# ---------------------------------------------------------------------------- DVC
@dataclass(frozen=True)
class DvcTrackResult:
    """What ``dvc_track`` did."""

    path: Path                 # the tracked path
    dvc_file: Path             # the ``.dvc`` file written next to it (commit it with git)
    remote: str | None         # the default remote pushed to, None if none configured
    pushed: bool

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


def _dvc_command() -> list[str]:
    if importlib.util.find_spec("dvc") is not None:
        return [sys.executable, "-m", "dvc"]
    exe = shutil.which("dvc")
    if exe is None:
        raise DvcError("dvc is not installed (neither importable from this Python nor on PATH)")
    return [exe]


def _run_dvc(args: list[str], cwd: Path, *, timeout: float, check: bool = True
             ) -> subprocess.CompletedProcess[str]:
    cmd = [*_dvc_command(), *args]
    env = dict(os.environ, DVC_NO_ANALYTICS="1")
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DvcError(f"`dvc {' '.join(args)}` in {cwd} timed out after {timeout:.0f}s") from exc
    if check and proc.returncode != 0:
        output = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        raise DvcError(f"`dvc {' '.join(args)}` in {cwd} failed (exit {proc.returncode}): {output}")
    return proc


def default_remote(repo_root: str | os.PathLike[str], *, timeout: float = 60.0) -> str | None:
    """Name of the DVC project's default remote, or None when none is set."""
    proc = _run_dvc(["config", "core.remote"], Path(repo_root), timeout=timeout, check=False)
    name = proc.stdout.strip()
    return name if proc.returncode == 0 and name else None


def dvc_track(path: str | os.PathLike[str], repo_root: str | os.PathLike[str], *,
              push: bool = True, timeout: float = 600.0) -> DvcTrackResult:
    """``dvc add`` ``path`` (a snapshot folder) in the DVC project at ``repo_root``,
    then ``dvc push`` it when ``push`` and a default remote is configured.

    ``path`` (absolute, or relative to ``repo_root``) must lie inside
    ``repo_root``. The ``.dvc`` file lands next to
    ``path`` (DVC also lists ``path`` in a ``.gitignore``); committing those to
    git is the caller's business (a project with ``core.autostage`` stages them).
    Raises ``DvcError`` with the command and DVC's message when anything fails,
    ``FileNotFoundError`` for a missing path or project.
    """
    root = Path(repo_root).resolve()
    target = Path(path)
    target = (target if target.is_absolute() else root / target).resolve()
    if not (root / ".dvc").is_dir():
        raise FileNotFoundError(f"{root}: not a DVC project (no .dvc folder; run `dvc init`)")
    if not target.exists():
        raise FileNotFoundError(f"{target}: nothing to track")
    try:
        rel = target.relative_to(root)
    except ValueError:
        raise ValueError(f"{target}: outside the DVC project {root}") from None
    _run_dvc(["add", str(rel)], root, timeout=timeout)
    dvc_file = target.with_name(target.name + ".dvc")
    if not dvc_file.is_file():
        raise DvcError(f"`dvc add {rel}` in {root} succeeded but wrote no {dvc_file}")
    remote = dvc_push(dvc_file, root, timeout=timeout) if push else None
    return DvcTrackResult(path=target, dvc_file=dvc_file, remote=remote, pushed=remote is not None)


def dvc_push(dvc_file: str | os.PathLike[str], repo_root: str | os.PathLike[str], *,
             timeout: float = 600.0) -> str | None:
    """``dvc push`` of a tracked path's ``.dvc`` file to the default remote; the
    remote's name, or None when none is configured (nothing pushed). Pushing
    what the remote holds already uploads nothing, so a caller cut between
    ``dvc add`` and the push can just push again."""
    root = Path(repo_root).resolve()
    remote = default_remote(root)
    if remote is not None:
        _run_dvc(["push", "--remote", remote, str(Path(dvc_file).resolve().relative_to(root))], root,
                 timeout=timeout)
    return remote
