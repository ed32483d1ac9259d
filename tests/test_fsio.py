"""Crash-safe writes: the old file survives a failed write, no temp is left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chesszero.fsio import atomic_write, atomic_write_bytes, write_json_atomic


def test_write_creates_parents_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "state.json"
    write_json_atomic(target, {"x": 1, "a": [1, 2]})
    assert json.loads(target.read_text()) == {"x": 1, "a": [1, 2]}
    atomic_write_bytes(target, b"{}")
    assert target.read_bytes() == b"{}"
    assert [p.name for p in target.parent.iterdir()] == ["state.json"]


def test_failed_write_keeps_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "ckpt.bin"
    atomic_write_bytes(target, b"old")

    def half_then_fail(fh) -> None:  # noqa: ANN001
        fh.write(b"new but torn")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(target, half_then_fail)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.bin"]
