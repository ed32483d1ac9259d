"""Training credit ledger: admitted rows fund optimizer presentations (SPEC 7).

Each durably admitted replay row funds ``reuse_ratio`` presentations (default
4). A quantum of ``S`` steps at global batch ``G`` spends ``S * G``
presentations, so it may start only once ``S * G / reuse_ratio`` funded rows
are available; surplus rows carry over to later quanta. Only rows that reached
the store count: feed the ledger from ``ReplayStore.total_appended`` with
``admit_through`` (idempotent, so replaying it after a crash is harmless) or
from ``append``'s return value.

A candidate network (progressive sizing) trains on the same rows without
being funded by them: its quanta are recorded with ``spend_catch_up`` in
``catch_up_presentations``, apart from the funded ones.

The ledger state is a small dict (``to_dict``/``from_dict``) saved as JSON
with an atomic rename (``save``/``load``), kept next to trainer checkpoints.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chesszero.fsio import write_json_atomic

__all__ = ["CreditLedger", "InsufficientCreditError"]

_VERSION = 1


class InsufficientCreditError(RuntimeError):
    """A quantum was spent before enough admitted rows funded it."""


@dataclass
class CreditLedger:
    """Presentations funded by admitted rows versus presentations spent.

    ``admitted_rows`` counts rows credited so far and ``store_total`` the
    store's ``total_appended`` they correspond to (for ``admit_through``).
    """

    reuse_ratio: float = 4.0
    admitted_rows: int = 0
    spent_presentations: int = 0
    store_total: int = 0
    catch_up_presentations: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.reuse_ratio) and self.reuse_ratio > 0):
            raise ValueError(f"reuse_ratio must be a positive number, got {self.reuse_ratio}")
        for name in ("admitted_rows", "spent_presentations", "store_total", "catch_up_presentations"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")

    # ------------------------------------------------------------ funding
    def admit(self, n: int) -> None:
        """Credit ``n`` newly admitted, durable rows."""
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"admitted row count must be a non-negative int, got {n!r}")
        self.admitted_rows += n

    def admit_through(self, total_appended: int) -> int:
        """Credit rows up to the store's ``total_appended``; returns rows newly credited."""
        if total_appended < self.store_total:
            raise ValueError(f"store total {total_appended} is behind the ledger's "
                             f"{self.store_total}: wrong store or a restored old ledger")
        new = total_appended - self.store_total
        self.admit(new)
        self.store_total = total_appended
        return new

    @property
    def funded_presentations(self) -> float:
        return self.admitted_rows * self.reuse_ratio

    @property
    def available_presentations(self) -> float:
        return self.funded_presentations - self.spent_presentations

    # ------------------------------------------------------------ gating
    @staticmethod
    def _cost(steps: int, batch: int) -> int:
        if steps <= 0 or batch <= 0:
            raise ValueError(f"steps and batch must be positive, got {steps} and {batch}")
        return steps * batch

    def rows_needed(self, steps: int, batch: int) -> int:
        """More rows that must be admitted before ``steps`` x ``batch`` may start."""
        short = self._cost(steps, batch) - self.available_presentations
        return max(0, math.ceil(short / self.reuse_ratio - 1e-9))

    def can_start(self, steps: int, batch: int) -> bool:
        """True when admitted rows fund ``steps`` optimizer steps at global ``batch``."""
        return self.rows_needed(steps, batch) == 0

    def spend(self, steps: int, batch: int) -> None:
        """Record a quantum; raises ``InsufficientCreditError`` when unfunded."""
        need = self.rows_needed(steps, batch)
        if need:
            raise InsufficientCreditError(
                f"{steps} steps x batch {batch} need {need} more admitted rows "
                f"(reuse {self.reuse_ratio}, admitted {self.admitted_rows}, "
                f"spent {self.spent_presentations} presentations)")
        self.spent_presentations += self._cost(steps, batch)

    def spend_catch_up(self, steps: int, batch: int) -> None:
        """Record an unfunded catch-up quantum (a candidate's), counted apart."""
        self.catch_up_presentations += self._cost(steps, batch)

    # ------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        return {"version": _VERSION, "reuse_ratio": self.reuse_ratio,
                "admitted_rows": self.admitted_rows,
                "spent_presentations": self.spent_presentations,
                "store_total": self.store_total, "catch_up_presentations": self.catch_up_presentations}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CreditLedger:
        if not isinstance(data, dict):
            raise ValueError(f"credit ledger state must be a dict, got {type(data).__name__}")
        if data.get("version") != _VERSION:
            raise ValueError(f"credit ledger state version {data.get('version')!r}, expected {_VERSION}")
        keys = {"reuse_ratio", "admitted_rows", "spent_presentations", "store_total"}
        unknown = set(data) - keys - {"version", "catch_up_presentations"}
        missing = keys - set(data)
        if unknown or missing:
            raise ValueError(f"credit ledger state: missing {sorted(missing)}, unknown {sorted(unknown)}")
        return cls(reuse_ratio=float(data["reuse_ratio"]), admitted_rows=data["admitted_rows"],
                   spent_presentations=data["spent_presentations"], store_total=data["store_total"],
                   catch_up_presentations=data.get("catch_up_presentations", 0))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write JSON atomically (temp file, fsync, rename)."""
        write_json_atomic(path, self.to_dict(), sort_keys=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CreditLedger:
        """Read a ledger saved by ``save``; errors name the file."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls.from_dict(data)
        except (json.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"{path}: invalid credit ledger: {exc}") from exc
