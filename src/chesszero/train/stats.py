"""Per-quantum training statistics (:class:`QuantumStats`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["QuantumStats"]


@dataclass(frozen=True)
class QuantumStats:
    """What one training quantum did; losses are means over steps and ranks.

    Loss terms are unweighted per-head values as they enter the total (masked
    heads averaged over all rows, missing labels counting zero).
    """

    start_step: int
    end_step: int
    world_size: int
    global_batch: int
    loss_total: float
    loss_policy: float
    loss_value: float
    loss_next_policy: float
    loss_length: float
    lr_first: float
    lr_last: float
    grad_norm_mean: float
    """Global gradient norm before clipping, mean over steps."""
    grad_norm_max: float
    clipped_fraction: float
    """Share of steps whose norm exceeded the clip threshold."""
    skipped_steps: int
    """Steps whose gradient was not finite (no update applied)."""
    reflected_fraction: float
    samples: int
    """Rows presented, all ranks together."""
    wall_s: float
    samples_per_s: float

    @property
    def steps(self) -> int:
        """Optimizer steps taken (including skipped ones)."""
        return self.end_step - self.start_step

    def as_dict(self, prefix: str = "train/") -> dict[str, float]:
        """Flat metric dictionary (e.g. for MLflow)."""
        out = {f"{prefix}{k}": float(v) for k, v in asdict(self).items()}
        out[f"{prefix}steps"] = float(self.steps)
        return out
