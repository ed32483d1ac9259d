"""Crash-safe file writes shared by every layer that keeps durable state.

A write goes to a temp file in the target's directory, is flushed and
fsynced, then ``os.replace``-d over the target and the directory is fsynced:
readers (and a process restarted after kill -9) see the old or the new file,
never a torn one. A failed write leaves the old file and no temp file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text", "file_sha256", "fsync_dir", "verify_sha256",
           "write_json_atomic", "write_sha256"]


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Makes a rename or a new entry in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any]) -> Path:
    """Calls ``write(fh)`` on a temp file, then atomically puts it at ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(target.parent)
    return target


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Atomically writes ``data`` to ``path``."""
    return atomic_write(path, lambda fh: fh.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Atomically writes UTF-8 ``text`` to ``path``."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike[str], payload: Any, *, sort_keys: bool = True) -> Path:
    """Atomically writes ``payload`` as indented JSON."""
    return atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=sort_keys))


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes (hex), read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_sha256(path: Path) -> Path:
    """Write ``<path>`` 's checksum next to it as ``<stem>.sha256`` (sha256sum format)."""
    path = Path(path)
    target = path.with_suffix(".sha256")
    target.write_text(f"{file_sha256(path)}  {path.name}\n")
    return target


def verify_sha256(path: Path) -> None:
    """Raise ``ValueError`` when ``<stem>.sha256`` exists and does not match ``path``."""
    path = Path(path)
    sums = path.with_suffix(".sha256")
    if not sums.exists():
        return
    expected = sums.read_text().split()[0]
    actual = file_sha256(path)
    if expected != actual:
        raise ValueError(f"{path}: sha256 {actual} does not match {sums} ({expected})")
