"""Searching given positions: ``analyse`` for one game, ``BatchSearch`` for many.

Both run the native ``Searcher`` (C++ trees, batched leaves, GIL released)
with an :class:`~chesszero.search.evaluators.Evaluator`. A ``BatchSearch``
slot asked to search a game that extends the game it searched before keeps
the subtree of the moves played since (the UCI engine and evaluation matches
get tree reuse for free).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chesszero import _core, core
from chesszero.search.evaluators import Evaluator
from chesszero.search.pipeline import BatchPipeline

SearchOptions = _core.SearchOptions
RootRule = _core.RootRule
MoveChoice = _core.MoveChoice
MoveChoiceOptions = _core.MoveChoiceOptions
# Material lead (pawns) after a captures-only quiescence search: SearchOptions.leaf_material's measure.
quiescent_material = _core.quiescent_material


def root_rule(name: str | Any) -> Any:
    """The native ``RootRule`` for 'puct' / 'gumbel' (any case; a ``RootRule`` passes through)."""
    if isinstance(name, RootRule):
        return name
    try:
        return RootRule.__members__[str(name).upper()]
    except KeyError:
        raise ValueError(f"unknown search root rule {name!r}; expected 'puct' or 'gumbel'") from None


def search_options(fields: dict[str, Any]) -> Any:
    """``SearchOptions(**fields)`` with ``root`` given by name ('puct' / 'gumbel') or as a ``RootRule``."""
    fields = dict(fields)
    if "root" in fields:
        fields["root"] = root_rule(fields["root"])
    return SearchOptions(**fields)


@dataclass(frozen=True)
class MoveStats:
    """One root move after a search (values from the root's side to move)."""

    uci: str
    action: int
    visits: float  # raw root visits (retained ones included)
    policy_target: float  # visits after forced-playout pruning
    prior: float  # network prior, no noise
    q: float  # backed-up value (first-play urgency value when unvisited)
    proven: int | None = None  # proven result for the root's side: 1 win, 0 draw, -1 loss
    plies: int = 0  # plies from the root to the end of the game along the proof


@dataclass(frozen=True)
class AnalysisResult:
    """What a search found at a position."""

    fen: str
    best_move: str  # the move chosen by the MoveChoiceOptions of the search
    value: float  # root value W - L, side to move
    raw_value: float  # network value of the root position
    visits: float  # root visits
    principal_variation: list[str]
    moves: list[MoveStats]  # every legal move: game-ending ones first, then highest prior first
    proven: int | None = None  # proven result of the root for its side: 1 win, 0 draw, -1 loss
    proven_plies: int = 0  # plies to the end of the game along the proof

    @property
    def mate_in(self) -> int | None:
        """Moves to a proven mate (negative: getting mated), as UCI's ``score mate``."""
        if self.proven == 1:
            return (self.proven_plies + 1) // 2
        if self.proven == -1:
            return -(self.proven_plies // 2)
        return None

    @property
    def visit_counts(self) -> dict[str, float]:
        """Root visits per legal move (UCI)."""
        return {m.uci: m.visits for m in self.moves}

    @property
    def most_visited(self) -> str:
        return max(self.moves, key=lambda m: (m.visits, m.prior)).uci


def _most_visits() -> MoveChoiceOptions:
    return MoveChoiceOptions(mode=MoveChoice.MOST_VISITS)


class BatchSearch:
    """Searches up to ``slots`` positions at once with one evaluator.

    ``options`` defaults to the evaluation preset (c = 1.0, no noise, no
    forced playouts) and ``choice`` to the most visited move.
    ``leaves_per_batch`` bounds a batch (default: enough for every slot's
    in-flight leaves).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        *,
        slots: int = 1,
        options: SearchOptions | None = None,
        choice: MoveChoiceOptions | None = None,
        seed: int = 0,
        leaves_per_batch: int | None = None,
        pipeline_depth: int = 1,
    ) -> None:
        self.options = options if options is not None else SearchOptions.evaluation()
        self.options.validate()
        self.choice = choice if choice is not None else _most_visits()
        self.choice.validate()
        self.evaluator = evaluator
        self._searcher = _core.Searcher(slots, self.options, seed, max(1, pipeline_depth))
        cap = leaves_per_batch or slots * self.options.leaves_per_tree
        self._depth = max(1, pipeline_depth)
        self._batch = cap

    @property
    def slots(self) -> int:
        return int(self._searcher.num_slots)

    def search(
        self, games: Sequence[core.Game], *, visits: int, noise: bool = False, pv_len: int = 16
    ) -> list[AnalysisResult]:
        """Searches ``games[i]`` in slot ``i`` to ``visits`` root visits each."""
        if visits < 1:
            raise ValueError(f"visits must be >= 1, got {visits}")
        if len(games) > self.slots:
            raise ValueError(f"{len(games)} games for {self.slots} search slots")
        for i, game in enumerate(games):
            self._searcher.start(i, game, visits, noise)
        with BatchPipeline(
            self._searcher, self.evaluator, batch_size=self._batch, depth=self._depth
        ) as pipe:
            pipe.run(lambda: self._searcher.active > 0)
        return [self._result(i, game, pv_len) for i, game in enumerate(games)]

    def proofs(self, slot: int = 0) -> list[tuple[list[str], int, int]]:
        """Every proven node of ``slot``'s tree: (moves from the root, result for
        that node's side to move: 1 win, 0 draw, -1 loss, plies to the end)."""
        return [(list(m), int(r), int(p)) for m, r, p in self._searcher.proofs(slot)]

    def raw_result(self, slot: int = 0, pv_len: int = 16) -> dict[str, Any]:
        """The native root report of ``slot``'s last search (every field the
        core gives, Gumbel ones included: ``child_considered``,
        ``child_search_visits``, ``child_gumbel``)."""
        return dict(self._searcher.result(slot, pv_len))

    def forget(self, slot: int) -> None:
        """Drops a slot's tree (e.g. at a new game)."""
        self._searcher.clear(slot)

    def _result(self, slot: int, game: core.Game, pv_len: int) -> AnalysisResult:
        r = self._searcher.result(slot, pv_len)
        best = self._searcher.choose_move(slot, self.choice, game.ply)
        moves = [
            MoveStats(uci=u, action=a, visits=v, policy_target=t, prior=p, q=q, proven=pr, plies=pl)
            for u, a, v, t, p, q, pr, pl in zip(
                r["moves"],
                r["actions"],
                r["child_visits"],
                r["child_targets"],
                r["priors"],
                r["q"],
                r["child_proven"],
                r["child_plies"],
                strict=True,
            )
        ]
        return AnalysisResult(
            fen=game.fen(),
            best_move=best,
            value=float(r["value"]),
            raw_value=float(r["raw_value"]),
            visits=float(r["visits"]),
            principal_variation=list(r["pv"]),
            moves=moves,
            proven=r["proven"],
            proven_plies=int(r["proven_plies"]),
        )


def analyse(
    game: core.Game,
    evaluator: Evaluator,
    *,
    visits: int,
    options: SearchOptions | None = None,
    choice: MoveChoiceOptions | None = None,
    seed: int = 0,
) -> AnalysisResult:
    """Searches ``game``'s current position with a fresh tree.

    Defaults: evaluation options (c = 1.0, no noise), most-visited move.
    ``choice=MoveChoiceOptions(mode=MoveChoice.POLICY)`` with ``visits=1``
    plays the network's top legal move without search.
    """
    if game.is_game_over():
        raise ValueError(f"cannot analyse a finished game: {game.fen()!r}")
    search = BatchSearch(evaluator, slots=1, options=options, choice=choice, seed=seed)
    return search.search([game], visits=visits)[0]


__all__ = [
    "quiescent_material",
    "AnalysisResult",
    "RootRule",
    "root_rule",
    "search_options",
    "BatchSearch",
    "MoveChoice",
    "MoveChoiceOptions",
    "MoveStats",
    "SearchOptions",
    "analyse",
]
