"""Which ladder rungs an evaluation plays (issue 22): the climb and the adaptive pick.

Pure functions over rung names and ratings, so the rules are tested with
scripted scores; the players and matches live in ``ladder`` and ``match``.

- **The climb** (the learning benchmark's final evaluation): ``climb_order``
  lists ``CLIMB_START`` (random, greedy, the Stockfish rungs with a random
  share, ``sf-n1``, ``sf-n300``) and then every stronger calibrated rung of
  the table by rating; ``climb`` plays them in that order and stops after
  ``ClimbRule.consecutive`` (2) consecutive rungs score below
  ``ClimbRule.below`` (0.25). A strong player climbs until it is
  outclassed twice; a weak one stops after its first two losses.
- **The adaptive pick** (the campaign's periodic evaluations,
  ``evaluate.adaptive_rungs``): ``nearest_rungs`` chooses the ``count``
  rungs of a pool whose expected score is nearest 0.5 at the previous
  evaluation's joint rating of the same mode: the rungs rated nearest a point
  estimate, the weakest ones above a lower bound (every game was won), the
  strongest ones below an upper bound; the first evaluation plays the weakest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

CLIMB_START = ("random", "greedy", "sf-n1-r30", "sf-n1-r10", "sf-n1", "sf-n300")
"""The climb's first rungs, in order (issue 22); stronger rungs of the table follow."""


@dataclass(frozen=True)
class ClimbRule:
    """Stop after ``consecutive`` rungs in a row scored below ``below``."""

    below: float = 0.25
    consecutive: int = 2

    def __post_init__(self) -> None:
        if not 0.0 < self.below <= 1.0 or self.consecutive < 1:
            raise ValueError(f"a climb stops after consecutive >= 1 rungs below a score in (0, 1]; got {self}")

    def done(self, scores: Sequence[float]) -> bool:
        """True once the last ``consecutive`` scores are all below ``below``."""
        tail = list(scores)[-self.consecutive:]
        return len(tail) == self.consecutive and all(s < self.below for s in tail)

    def describe(self) -> str:
        return f"stops after {self.consecutive} consecutive rungs scoring below {self.below:g}"


def climb_order(ratings: Mapping[str, float], start: Sequence[str] = CLIMB_START) -> list[str]:
    """``start``'s rungs present in ``ratings`` (name -> calibrated rating), then
    every rung rated above the strongest of them, weakest first."""
    named = [name for name in start if name in ratings]
    top = max((ratings[name] for name in named), default=float("-inf"))
    above = sorted((r, name) for name, r in ratings.items() if r > top and name not in named)
    return named + [name for _, name in above]


def climb(play: Callable[[str], float], order: Sequence[str], rule: ClimbRule = ClimbRule()) -> list[str]:
    """Plays ``order`` (``play(rung)`` returns the score) until ``rule`` says
    stop or the ladder ends; returns the rungs played."""
    played: list[str] = []
    scores: list[float] = []
    for rung in order:
        scores.append(play(rung))
        played.append(rung)
        if rule.done(scores):
            break
    return played


def nearest_rungs(pool: Mapping[str, float], previous: tuple[float, str] | None, count: int) -> list[str]:
    """The ``count`` rungs of ``pool`` (name -> rating) nearest 0.5 at the
    ``previous`` joint rating ``(estimate, direction)`` of the same mode
    (direction ``""``, ``">"`` or ``"<"``; None: no evaluation yet), weakest first."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    ordered = sorted(pool, key=lambda name: pool[name])
    if count >= len(ordered):
        return ordered
    if previous is None:
        return ordered[:count]
    estimate, direction = previous
    if direction == ">":
        above = [n for n in ordered if pool[n] > estimate]
        chosen = above[:count] if len(above) >= count else ordered[-count:]
    elif direction == "<":
        below = [n for n in ordered if pool[n] < estimate]
        chosen = below[-count:] if len(below) >= count else ordered[:count]
    else:
        chosen = sorted(ordered, key=lambda n: (abs(pool[n] - estimate), pool[n]))[:count]
    return [n for n in ordered if n in chosen]


__all__ = ["CLIMB_START", "ClimbRule", "climb", "climb_order", "nearest_rungs"]
