"""What training gained: one player's joint rating minus a control's (issue 22).

The learning benchmark plays the campaign's final artifact and its untrained
``initial`` artifact (the control arm) under the same protocol; each arm has a
joint maximum-likelihood rating over the rungs it played
(``joint_rating``). The gain is the difference of the two:

- Both arms rated by a point estimate: the estimate is the difference of the
  estimates; the 95% interval is the percentile bootstrap of the difference,
  each arm's opening pairs resampled independently (per rung, as
  ``joint_rating`` does; the arms' resamples come from separate seeded
  generators) and each refitted. Should every resample of both arms give
  the same fit (the bootstrap says nothing), the interval is the arms'
  intervals combined, ``[final.lower - control.upper, final.upper - control.lower]``.
- Either arm a one-sided bound (every game won or lost): the difference is a
  bound too, from the arms' interval ends: at least ``final.lower -
  control.upper`` (``>``) or at most ``final.upper - control.lower``
  (``<``), whichever is finite. Both infinite (both arms swept the same way)
  leaves the gain undetermined (``?``). ``describe`` says which arm was a bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from chesszero.evaluate.elo import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from chesszero.evaluate.joint_rating import JointRating, RungGames, joint_rating, resampled_fits


@dataclass(frozen=True)
class RatingGain:
    """Final minus control in Elo; ``direction`` ``""`` (point with interval),
    ``">"`` / ``"<"`` (a bound: ``estimate`` is it) or ``"?"`` (undetermined)."""

    estimate: float
    lower: float
    upper: float
    direction: str
    final: JointRating
    control: JointRating
    confidence: float
    resamples: int

    @property
    def is_bound(self) -> bool:
        return self.direction in (">", "<")

    def note(self) -> str:
        """Which arm was a bound, if any."""
        bounds = [f"{name} is a bound ({r.direction} {r.estimate:.0f})"
                  for name, r in (("final", self.final), ("control", self.control)) if r.is_bound]
        return "; ".join(bounds)

    def describe(self) -> str:
        """e.g. ``+612 [540, 690]``, ``> +350 (final is a bound (> 940))`` or
        ``undetermined (final ...; control ...)``."""
        if self.direction == "?":
            return f"undetermined ({self.note()})"
        if self.is_bound:
            return f"{self.direction} {self.estimate:+.0f} ({self.note()})"
        return f"{self.estimate:+.0f} [{self.lower:+.0f}, {self.upper:+.0f}]"

    def to_dict(self) -> dict[str, object]:
        def finite(v: float) -> float | None:
            return v if math.isfinite(v) else None

        return {"estimate": finite(self.estimate), "lower": finite(self.lower), "upper": finite(self.upper),
                "direction": self.direction, "confidence": self.confidence, "resamples": self.resamples,
                "note": self.note(), "describe": self.describe(),
                "final": {**self.final.to_dict(), "describe": self.final.describe()},
                "control": {**self.control.to_dict(), "describe": self.control.describe()}}


def rating_gain(final: Sequence[RungGames], control: Sequence[RungGames], *,
                resamples: int = DEFAULT_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
                seed: int = 0) -> RatingGain:
    """The joint rating of ``final`` minus that of ``control`` (module docstring)."""
    f = joint_rating(final, resamples=resamples, confidence=confidence, seed=seed)
    c = joint_rating(control, resamples=resamples, confidence=confidence, seed=seed)
    common = {"final": f, "control": c, "confidence": confidence, "resamples": resamples}
    if f.is_bound or c.is_bound:
        low, high = f.lower - c.upper, f.upper - c.lower  # inf - inf cannot occur: each side has one finite end
        if math.isfinite(low):
            return RatingGain(low, low, math.inf, ">", **common)
        if math.isfinite(high):
            return RatingGain(high, -math.inf, high, "<", **common)
        return RatingGain(math.nan, -math.inf, math.inf, "?", **common)
    # independent generators per arm: each arm's resamples are its own bootstrap
    rng_final, rng_control = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    diffs = resampled_fits(final, resamples, rng_final) - resampled_fits(control, resamples, rng_control)
    alpha = 1.0 - confidence
    low, high = (float(v) for v in np.quantile(diffs, [alpha / 2.0, 1.0 - alpha / 2.0]))
    if high - low <= 1e-6:  # every resample alike in both arms: the arms' own (likelihood) intervals
        low, high = f.lower - c.upper, f.upper - c.lower
    return RatingGain(f.estimate - c.estimate, low, high, "", **common)


__all__ = ["RatingGain", "rating_gain"]
