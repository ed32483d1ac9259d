"""A learning run's host speed: the value ``benchmarks/host_speed.py`` probes
and every report reads.

``summary.json`` carries ``host_speed: {before, after, changed}``, each probe
a ``HostSpeed.to_dict()``. Runs whose probes differ by more than ``DRIFT``
(either rate) ran with different compute per wall-clock hour and compare
per generation only; a run whose own two probes differ had a host that
changed speed under it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

DRIFT = 0.2
"""Relative difference between two probes beyond which hosts (or one host
over a run) count as different speeds."""

RATES = ("perft_nodes_per_s", "train_samples_per_s")


@dataclasses.dataclass(frozen=True)
class HostSpeed:
    perft_nodes_per_s: float
    train_samples_per_s: float
    size: str
    measured_at: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "host_speed") -> HostSpeed:
        """Reads a saved probe; a malformed one raises ValueError naming `where` and the field."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a mapping of {', '.join(RATES)}, size, measured_at; got {data!r}")
        try:
            rates = [float(data[k]) for k in RATES]
            size, when = str(data["size"]), str(data["measured_at"])
        except KeyError as exc:
            raise ValueError(f"{where}: missing {exc.args[0]!r}") from None
        except (TypeError, ValueError):
            raise ValueError(f"{where}: rates must be numbers, got {[data.get(k) for k in RATES]}") from None
        if not all(r > 0 for r in rates):
            raise ValueError(f"{where}: rates must be positive, got {rates}")
        return cls(rates[0], rates[1], size, when)

    def ratios(self, other: HostSpeed) -> tuple[float, float]:
        """This probe's rates over `other`'s: (perft, training)."""
        return self.perft_nodes_per_s / other.perft_nodes_per_s, self.train_samples_per_s / other.train_samples_per_s

    def differs(self, other: HostSpeed, drift: float = DRIFT) -> bool:
        """Whether either rate differs from `other`'s by more than `drift` (relative)."""
        return any(abs(r - 1.0) > drift for r in self.ratios(other))

    def describe(self) -> str:
        return (f"perft {self.perft_nodes_per_s / 1e6:.0f} M nodes/s, training {self.train_samples_per_s:.0f} "
                f"samples/s ({self.size})")


def host_speeds(summary: dict[str, Any]) -> tuple[HostSpeed, HostSpeed] | None:
    """A run's probes (before the campaign, after the final evaluation), or None for a run without them."""
    host = summary.get("host_speed")
    if not host:
        return None
    return (HostSpeed.from_dict(host.get("before"), "host_speed.before"),
            HostSpeed.from_dict(host.get("after"), "host_speed.after"))


__all__ = ["DRIFT", "HostSpeed", "host_speeds"]
