"""Our network as a match ``Player``, and the slot-addressed search behind it.

- ``SlotSearch``: native PUCT searches (``chesszero._core.Searcher``) on
  numbered slots, driven batch by batch through ``search.BatchPipeline``.
  Unlike ``search.BatchSearch`` (which searches ``games[i]`` in slot ``i``),
  callers name the slot of every game, so a match slot keeps its tree across
  the plies of its game (subtree reuse, SPEC 6) whichever other games are
  searched in the same call; and a run can be stopped between batches
  (``keep_going``), which the UCI engine needs for ``stop`` and time limits.
  A stopped run leaves the statistics gathered so far (the root is always
  evaluated first) and is never resumed behind the caller's back.
- ``policy_moves``: the network's top legal move for many games in one
  evaluator call (no search).
- ``EnginePlayer``: a ``Player`` searching every game where it is to move
  to ``visits`` root visits (evaluation options: c = 1.0, no noise, no forced
  playouts; most-visited move), or, with ``visits=None``, playing the policy
  argmax. Either way all concurrent games share each evaluator call: one call
  per ply for the policy player, one per batch of leaves for the searcher.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from chesszero import _core, core
from chesszero.search.analysis import MoveChoice, MoveChoiceOptions, SearchOptions
from chesszero.search.evaluators import Evaluator, check_planes
from chesszero.search.pipeline import BatchPipeline

if TYPE_CHECKING:
    from chesszero.core import Game


@dataclass(frozen=True)
class RootReport:
    """What a slot's search says about its root (values: root side to move)."""

    visits: float  # root visits, retained ones included
    value: float  # backed-up root value W - L
    raw_value: float  # network value of the root position
    best: str | None  # most visited move, ties to the higher prior (None: no legal move)
    pv: tuple[str, ...]  # most-visited line
    nodes: int  # nodes held by the slot's tree
    seldepth: int = 0  # deepest ply a traversal of this search reached
    mean_depth: float = 0.0  # mean ply of the leaves this search reached
    proven: int | None = None  # proven result for the root's side: 1 win, 0 draw, -1 loss
    proven_plies: int = 0  # plies to the end of the game along the proof


def most_visits() -> MoveChoiceOptions:
    """Move choice of evaluation play: the most visited root move."""
    return MoveChoiceOptions(mode=MoveChoice.MOST_VISITS)


class SlotSearch:
    """Stoppable searches of games on caller-chosen slots (module docstring).

    ``options`` defaults to ``SearchOptions.evaluation()``; its
    ``leaves_per_tree`` is the number of in-flight leaves per tree (parallel
    leaves, virtual loss). A batch holds up to ``batch_size`` leaves
    (default: one full round, ``slots * leaves_per_tree``).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        *,
        slots: int = 1,
        options: SearchOptions | None = None,
        seed: int = 0,
        batch_size: int | None = None,
    ) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        self.options = options if options is not None else SearchOptions.evaluation()
        self.options.validate()
        self.evaluator = evaluator
        self.batch_size = batch_size or slots * self.options.leaves_per_tree
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        self._searcher = _core.Searcher(slots, self.options, seed, 1)
        self._unfinished: set[int] = set()

    @property
    def slots(self) -> int:
        return int(self._searcher.num_slots)

    def run(
        self,
        work: Sequence[tuple[int, Game]],
        *,
        visits: int,
        keep_going: Callable[[], bool] | None = None,
    ) -> int:
        """Searches each ``(slot, game)`` to ``visits`` root visits; returns positions evaluated.

        ``start`` then ``drive``; see there.
        """
        self.start(work, visits=visits)
        return self.drive(keep_going)

    def start(self, work: Sequence[tuple[int, Game]], *, visits: int) -> None:
        """Sets each ``(slot, game)`` searching toward ``visits`` root visits.

        A slot whose previous game ``game`` extends keeps the subtree of the
        moves played since (its retained visits count toward ``visits``).
        Slots left unfinished by a stopped ``drive`` and not named here are
        cleared.
        """
        slots = [slot for slot, _ in work]
        if len(set(slots)) != len(slots):
            raise ValueError(f"each slot may appear once per run, got {slots}")
        bad = [s for s in slots if not 0 <= s < self.slots]
        if bad:
            raise ValueError(f"slots {bad} are outside 0..{self.slots - 1}")
        for stale in self._unfinished - set(slots):
            self._searcher.clear(stale)  # never let a stopped search resume unasked
        self._unfinished = set(slots)
        for slot, game in work:
            self._searcher.start(slot, game, visits, False)

    def drive(self, keep_going: Callable[[], bool] | None = None) -> int:
        """Runs the started searches to their targets; returns positions evaluated.

        ``keep_going`` is asked before every batch after the first; when it
        returns False the searches stop (outstanding work is answered first).
        The first batch always runs, so every root has been evaluated.
        """
        searcher = self._searcher

        def more() -> bool:
            return searcher.active > 0 and (keep_going is None or keep_going())

        with BatchPipeline(searcher, self.evaluator, batch_size=self.batch_size, depth=1) as pipe:
            pipe.step()
            while more() and pipe.step(more):
                pass
            positions = pipe.positions
        if searcher.active == 0:
            self._unfinished.clear()
        return positions

    def report(self, slot: int, *, pv_len: int = 32) -> RootReport:
        """Root statistics of ``slot`` (ValueError when its root was never evaluated)."""
        r = self._searcher.result(slot, pv_len)
        return RootReport(
            visits=float(r["visits"]),
            value=float(r["value"]),
            raw_value=float(r["raw_value"]),
            best=None if r["best"] is None else str(r["best"]),
            pv=tuple(str(m) for m in r["pv"]),
            nodes=int(r["nodes"]),
            seldepth=int(r["seldepth"]),
            mean_depth=float(r["mean_depth"]),
            proven=r["proven"],
            proven_plies=int(r["proven_plies"]),
        )

    def root_moves(self, slot: int) -> list[tuple[str, float, float]]:
        """(move, visits, prior) of every root move of ``slot``, most visited first."""
        r = self._searcher.result(slot, 0)
        moves = zip(r["moves"], r["child_visits"], r["priors"], strict=True)
        return sorted(((str(m), float(v), float(p)) for m, v, p in moves), key=lambda t: (-t[1], -t[2]))

    def choose(self, slot: int, *, ply: int = 0, choice: MoveChoiceOptions | None = None) -> str:
        """The move ``choice`` (default: most visits) picks from ``slot``'s root."""
        return str(self._searcher.choose_move(slot, choice or most_visits(), ply))

    def forget(self, slot: int) -> None:
        """Drops ``slot``'s tree; its next search starts afresh."""
        self._searcher.clear(slot)
        self._unfinished.discard(slot)


def policy_moves(evaluator: Evaluator, games: Sequence[Game]) -> list[str]:
    """The highest-logit legal move of each game, from one evaluator call."""
    if not games:
        return []
    for game in games:
        if game.is_game_over():
            raise ValueError(f"no move to choose in a finished game: {game.fen()}")
    planes = check_planes(core.encode_batch(list(games)))
    logits = np.asarray(evaluator.evaluate(planes)[0])
    if logits.shape != (len(games), core.NUM_ACTIONS):
        raise ValueError(
            f"evaluator returned policy logits of shape {list(logits.shape)} for "
            f"{len(games)} positions, expected [{len(games)}, {core.NUM_ACTIONS}]"
        )
    moves = []
    for row, game in zip(logits, games, strict=True):
        legal = game.legal_actions()
        scores = row[legal]
        if np.isnan(scores).any():
            raise ValueError(f"evaluator returned NaN policy logits for {game.fen()}")
        moves.append(game.uci_of(int(legal[int(np.argmax(scores))])))
    return moves


class EnginePlayer:
    """The network as a batched match ``Player`` (module docstring).

    ``visits=None`` plays the policy argmax; otherwise each move comes from
    a ``visits``-visit search (retained visits count when ``tree_reuse``,
    as in self-play; ``tree_reuse=False`` searches every move from scratch).
    ``slots`` is the number of search trees; a match slot beyond it grows the
    searcher (dropping the trees held so far). ``options`` defaults to the
    evaluation preset with ``leaves_per_tree`` in-flight leaves per tree
    (> 1: bigger batches through virtual loss); give one or the other.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        *,
        visits: int | None,
        name: str | None = None,
        slots: int = 8,
        leaves_per_tree: int | None = None,
        tree_reuse: bool = True,
        options: SearchOptions | None = None,
        seed: int = 0,
    ) -> None:
        if visits is not None and visits < 1:
            raise ValueError(f"visits must be >= 1 (or None for policy play), got {visits}")
        if options is not None and leaves_per_tree is not None:
            raise ValueError("give options or leaves_per_tree, not both")
        self.name = name or (f"net-v{visits}" if visits is not None else "net-policy")
        self.visits = visits
        self.evaluator = evaluator
        self.tree_reuse = tree_reuse
        if options is None:
            options = SearchOptions.evaluation()
            options.leaves_per_tree = leaves_per_tree if leaves_per_tree is not None else 1
        options.validate()
        self._options = options
        self._seed = seed
        self._search: SlotSearch | None = None
        self._slots = slots
        self._closed = False

    def new_game(self, slot: int) -> None:
        if self._search is not None and slot < self._search.slots:
            self._search.forget(slot)

    def select_moves(self, games: Sequence[Game], slots: Sequence[int]) -> list[str]:
        if self._closed:
            raise RuntimeError(f"{self.name} is closed")
        if len(games) != len(slots):
            raise ValueError(f"got {len(games)} games but {len(slots)} slots")
        if not games:
            return []
        if self.visits is None:
            return policy_moves(self.evaluator, games)
        if any(s < 0 for s in slots):
            raise ValueError(f"slots must be non-negative, got {list(slots)}")
        search = self._searcher(max(slots) + 1)
        if not self.tree_reuse:
            for slot in slots:
                search.forget(slot)
        search.run(list(zip(slots, games, strict=True)), visits=self.visits)
        return [search.choose(slot, ply=game.ply) for slot, game in zip(slots, games, strict=True)]

    def close(self) -> None:
        self._closed = True
        self._search = None

    def _searcher(self, needed: int) -> SlotSearch:
        if self._search is None or self._search.slots < needed:
            self._slots = max(self._slots, needed)
            self._search = SlotSearch(
                self.evaluator, slots=self._slots, options=self._options, seed=self._seed
            )
        return self._search


__all__ = [
    "EnginePlayer",
    "RootReport",
    "SlotSearch",
    "most_visits",
    "policy_moves",
]
