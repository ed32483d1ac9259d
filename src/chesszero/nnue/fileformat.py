"""The ``.nnue`` file, version 1 (docs/nnue.md section 5), written and read in numpy.

``write_nnue(path, qnet)`` writes atomically; ``read_nnue(path)`` checks the
magic, version, sizes, scales, length and the FNV-1a checksum and raises
``ValueError`` naming the file and the defect, like the core's loader, so a
file is checked here before ``_core.NnueNet.load`` sees it.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from chesszero.fsio import atomic_write_bytes
from chesszero.nnue.quant import INPUTS, QA, QB, SCALE, W1_MAX_INT, W2_MAX_INT, QuantNet

__all__ = ["HEADER", "MAGIC", "VERSION", "file_size", "fnv1a32", "read_nnue", "to_bytes", "write_nnue"]

MAGIC = b"CZNN"
VERSION = 1
HEADER = struct.Struct("<4s6I")  # magic, version, inputs, hidden, qa, qb, scale
MAX_HIDDEN = 256


def fnv1a32(data: bytes) -> int:
    """FNV-1a, 32-bit, of ``data``."""
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def file_size(hidden: int) -> int:
    """Bytes of a version-1 file with ``hidden`` neurons (N = 128: 197,412)."""
    return HEADER.size + 2 * (INPUTS * hidden + hidden + 2 * hidden) + 4 + 4


def to_bytes(net: QuantNet) -> bytes:
    """The file's bytes: header, W1 row-major [feature][neuron], b1, W2, b2, checksum."""
    n = net.hidden
    if not 1 <= n <= MAX_HIDDEN or n % 16:
        raise ValueError(f"hidden must be a multiple of 16 in 16..{MAX_HIDDEN}, got {n}")
    if net.w1.shape != (INPUTS, n) or net.w2.shape != (2 * n,):
        raise ValueError(f"W1 must be [{INPUTS}, {n}] and W2 [{2 * n}], got {list(net.w1.shape)}, {list(net.w2.shape)}")
    body = b"".join([
        HEADER.pack(MAGIC, VERSION, INPUTS, n, QA, QB, SCALE),
        np.ascontiguousarray(net.w1, "<i2").tobytes(),
        np.ascontiguousarray(net.b1, "<i2").tobytes(),
        np.ascontiguousarray(net.w2, "<i2").tobytes(),
        struct.pack("<i", int(net.b2)),
    ])
    return body + struct.pack("<I", fnv1a32(body))


def write_nnue(path: str | Path, net: QuantNet) -> Path:
    """Writes ``net`` to ``path`` atomically (temp file + rename)."""
    return atomic_write_bytes(path, to_bytes(net))


def read_nnue(path: str | Path) -> QuantNet:
    """Reads and checks a version-1 file; ``ValueError`` naming the file on any defect."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ValueError(f"{str(path)!r}: cannot read the NNUE file ({error.strerror})") from error

    def bad(what: str) -> ValueError:
        return ValueError(f"{str(path)!r} is not a valid NNUE file: {what}")

    if len(data) < HEADER.size:
        raise bad(f"{len(data)} bytes, shorter than the {HEADER.size}-byte header")
    magic, version, inputs, hidden, qa, qb, scale = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise bad(f"magic {magic!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise bad(f"version {version}, expected {VERSION}")
    if inputs != INPUTS:
        raise bad(f"{inputs} inputs, expected {INPUTS}")
    if not 1 <= hidden <= MAX_HIDDEN or hidden % 16:
        raise bad(f"hidden {hidden}, expected a multiple of 16 in 16..{MAX_HIDDEN}")
    if (qa, qb, scale) != (QA, QB, SCALE):
        raise bad(f"scales (qa, qb, scale) = {(qa, qb, scale)}, expected {(QA, QB, SCALE)}")
    if len(data) != file_size(hidden):
        raise bad(f"{len(data)} bytes, expected {file_size(hidden)} for hidden {hidden} (truncated or padded)")
    stored = struct.unpack_from("<I", data, len(data) - 4)[0]
    actual = fnv1a32(data[:-4])
    if stored != actual:
        raise bad(f"checksum mismatch (stored {stored:#010x}, computed {actual:#010x})")
    at = HEADER.size
    w1 = np.frombuffer(data, "<i2", INPUTS * hidden, at).reshape(INPUTS, hidden)
    at += w1.nbytes
    b1 = np.frombuffer(data, "<i2", hidden, at)
    at += b1.nbytes
    w2 = np.frombuffer(data, "<i2", 2 * hidden, at)
    at += w2.nbytes
    b2 = struct.unpack_from("<i", data, at)[0]
    if np.abs(w2.astype(np.int32)).max() > W2_MAX_INT:
        raise bad(f"a W2 weight exceeds {W2_MAX_INT} in magnitude")
    for name, values in (("W1", w1), ("b1", b1)):
        if np.abs(values.astype(np.int32)).max() > W1_MAX_INT:
            raise bad(f"a {name} weight exceeds {W1_MAX_INT} in magnitude (the int16 overflow bound)")
    return QuantNet(w1.astype(np.int16), b1.astype(np.int16), w2.astype(np.int16), int(b2))
