"""The ladder's rungs as values: which fixed opponents exist (SPEC 10).

The recipe names rungs (``evaluate.rungs``) and is validated against
``DEFAULT_RUNGS`` here, below everything that plays them; how a rung plays
(``rung_player``), its calibration and rating live in
``chesszero.evaluate.ladder``, whose docstring says why each rung exists.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT_RUNGS", "Rung", "RungKind"]


class RungKind(enum.Enum):
    RANDOM = "random"
    GREEDY = "greedy"
    STOCKFISH = "stockfish"


@dataclass(frozen=True)
class Rung:
    """One fixed opponent; ``rating``/``stderr`` are set once calibrated."""

    name: str
    kind: RungKind
    nodes: int | None = None
    rating: float | None = None
    stderr: float | None = None
    random_share: float = 0.0

    def __post_init__(self) -> None:
        if (self.kind is RungKind.STOCKFISH) != (self.nodes is not None):
            raise ValueError(f"rung {self.name!r}: nodes is required exactly for Stockfish rungs")
        if self.random_share and self.kind is RungKind.RANDOM:
            raise ValueError(f"rung {self.name!r}: random_share makes no sense for the random mover")
        if not 0.0 <= self.random_share <= 1.0:
            raise ValueError(f"rung {self.name!r}: random_share must lie in [0, 1]")

    def rated(self, rating: float, stderr: float) -> Rung:
        """This rung with a calibrated rating."""
        return dataclasses.replace(self, rating=rating, stderr=stderr)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind.value,
            "nodes": self.nodes,
            "random_share": self.random_share,
            "rating": self.rating,
            "stderr": self.stderr,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Rung:
        nodes, rating, stderr = data.get("nodes"), data.get("rating"), data.get("stderr")
        return cls(
            name=str(data["name"]),
            kind=RungKind(data["kind"]),
            nodes=None if nodes is None else int(nodes),  # type: ignore[call-overload]
            rating=None if rating is None else float(rating),  # type: ignore[arg-type]
            stderr=None if stderr is None else float(stderr),  # type: ignore[arg-type]
            random_share=float(data.get("random_share", 0.0)),  # type: ignore[arg-type]
        )


DEFAULT_RUNGS: tuple[Rung, ...] = (
    Rung("random", RungKind.RANDOM),
    Rung("greedy-r50", RungKind.GREEDY, random_share=0.5),
    Rung("greedy", RungKind.GREEDY),
    Rung("sf-n1-r30", RungKind.STOCKFISH, 1, random_share=0.3),
    Rung("sf-n1-r10", RungKind.STOCKFISH, 1, random_share=0.1),
    *(
        Rung(f"sf-n{n}", RungKind.STOCKFISH, n)
        for n in (1, 300, 600, 1000, 2000, 5000, 10000, 20000)
    ),
)
"""The default ladder, weakest first (module docstring)."""
