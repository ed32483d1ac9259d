"""Schedule tables keyed by generation, step or ply.

A schedule is written in ``params.yaml`` as a list of ``[from_key, value]``
pairs with strictly increasing keys starting at 0:

- :class:`StepSchedule` is piecewise constant: ``at(k)`` is the value of the
  last entry whose key is ``<= k`` (visit cap, ply cap, replay capacity).
- :class:`LinearSchedule` interpolates linearly between entries and holds the
  last value afterwards (learning rate, root-value blend, temperature).

Both are generic in the value type so fields can range-check values, e.g.
``StepSchedule[Annotated[int, Field(ge=1)]]``.
"""

from __future__ import annotations

import bisect
from typing import Generic, TypeVar

from pydantic import RootModel, model_validator

__all__ = ["LinearSchedule", "StepSchedule"]

V = TypeVar("V", int, float)


class _Table(RootModel[list[tuple[int, V]]], Generic[V]):
    """Common validation: non-empty, first key 0, keys strictly increasing."""

    @model_validator(mode="after")
    def _check_keys(self) -> _Table[V]:
        keys = [k for k, _ in self.root]
        if not keys:
            raise ValueError("schedule needs at least one [from, value] entry")
        if keys[0] != 0:
            raise ValueError(f"schedule must start at key 0, got {keys[0]}")
        if any(b <= a for a, b in zip(keys, keys[1:], strict=False)):
            raise ValueError(f"schedule keys must be strictly increasing, got {keys}")
        return self

    @property
    def keys(self) -> list[int]:
        """The ``from`` keys in order."""
        return [k for k, _ in self.root]

    @property
    def values(self) -> list[V]:
        """The values in key order."""
        return [v for _, v in self.root]

    def _index(self, key: int | float) -> int:
        if key < 0:
            raise ValueError(f"schedule lookup key must be >= 0, got {key}")
        return bisect.bisect_right(self.keys, key) - 1


class StepSchedule(_Table[V], Generic[V]):
    """Piecewise-constant schedule: the value of the last entry at or before the key."""

    def at(self, key: int | float) -> V:
        """Value in force at ``key`` (a generation, step or ply)."""
        return self.root[self._index(key)][1]


class LinearSchedule(_Table[V], Generic[V]):
    """Piecewise-linear schedule, constant after its last entry."""

    def at(self, key: int | float) -> float:
        """Linearly interpolated value at ``key``."""
        i = self._index(key)
        k0, v0 = self.root[i]
        if i + 1 == len(self.root):
            return float(v0)
        k1, v1 = self.root[i + 1]
        return float(v0) + (float(v1) - float(v0)) * (key - k0) / (k1 - k0)
