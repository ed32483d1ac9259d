"""Resumable stage files of an NNUE build (``runs/nnue/<name>/``).

A stage writes its arrays as ``<stage>.npz`` and then ``<stage>.json``
(its input key and a small summary), each atomically (``chesszero.fsio``);
a rerun whose inputs hash to the same key finds both and skips the stage.
A kill between the two writes leaves no ``.json``, so the stage runs again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chesszero.fsio import atomic_write, write_json_atomic

__all__ = ["Stage", "input_key"]


def input_key(inputs: Mapping[str, Any]) -> str:
    """A short hash of a stage's inputs (JSON-serialisable)."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Stage:
    """One stage's files in ``work``: ``<name>.npz`` (arrays) and ``<name>.json`` (key and summary)."""

    work: Path
    name: str

    @property
    def arrays_path(self) -> Path:
        return self.work / f"{self.name}.npz"

    @property
    def meta_path(self) -> Path:
        return self.work / f"{self.name}.json"

    def done(self, key: str) -> dict[str, Any] | None:
        """The saved summary when the stage finished with inputs ``key``, else None."""
        if not (self.meta_path.is_file() and self.arrays_path.is_file()):
            return None
        meta = json.loads(self.meta_path.read_text())
        return meta.get("summary", {}) if meta.get("key") == key else None

    def load(self) -> dict[str, np.ndarray]:
        with np.load(self.arrays_path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}

    def save(self, key: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any]) -> None:
        """Writes the arrays, then the key (the marker that the stage is complete)."""
        self.meta_path.unlink(missing_ok=True)
        atomic_write(self.arrays_path, lambda fh: np.savez(fh, **arrays))
        write_json_atomic(self.meta_path, {"key": key, "summary": dict(summary)})
