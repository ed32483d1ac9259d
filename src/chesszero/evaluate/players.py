"""Players behind one batched interface, and the fixed ladder opponents.

``Player`` is the protocol the match runner drives. A match keeps up to
``concurrency`` games in flight, each in a numbered *slot*; on every ply the
runner calls ``select_moves`` once per player with all games in which that
player is to move, so a network player can evaluate them in one batch:

- ``new_game(slot)``: a new game begins in ``slot``; forget anything kept for
  the previous game there (search tree, engine hash, move history);
- ``select_moves(games, slots)``: one UCI move for each game (``games[i]``
  is being played in ``slots[i]``); games are the referee's live
  ``chesszero.core.Game`` objects and must not be modified;
- ``close()``: release processes and threads; the player is unusable after.

Implementations here:

- ``RandomPlayer``: a uniformly random legal move (seeded).
- ``GreedyPlayer``: one-ply material greed: a mating move first, otherwise the
  move maximising own-minus-opponent material afterwards, random tie-break;
  optionally a seeded share of uniformly random moves (``random_share``).
- ``StockfishPlayer``: Stockfish over UCI at a fixed node count, one thread per
  engine process; optionally a seeded share of uniformly random moves
  (``random_share``, reproducible weakening between the greedy mover and
  Stockfish's minimum search) or ``Skill Level`` (not reproducible: Stockfish
  seeds it from the clock).

Legality and game state always come from the native core; python-chess is used
only to talk UCI to Stockfish.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import chess
import chess.engine

if TYPE_CHECKING:
    from chesszero.core import Game

STOCKFISH_PATH = "/usr/games/stockfish"

PIECE_VALUES: dict[str, int] = {"p": 1, "n": 3, "b": 3, "r": 5, "q": 9, "k": 0}
"""Material values used by ``GreedyPlayer`` (lower-case piece letters)."""


@runtime_checkable
class Player(Protocol):
    """Anything that can play moves in a batched match (see module docstring)."""

    name: str

    def new_game(self, slot: int) -> None: ...

    def select_moves(self, games: Sequence[Game], slots: Sequence[int]) -> list[str]: ...

    def close(self) -> None: ...


def material_balance(fen: str, white: bool) -> int:
    """Material of ``white`` (True) or Black minus the other side's, from a FEN."""
    placement = fen.split(" ", 1)[0]
    total = 0
    for char in placement:
        value = PIECE_VALUES.get(char.lower())
        if value is None:
            continue
        total += value if char.isupper() == white else -value
    return total


def _legal_or_raise(game: Game, player: str) -> list[str]:
    legal = game.legal_uci()
    if not legal:
        raise ValueError(f"{player} asked to move in a finished game: {game.fen()}")
    return legal


class RandomPlayer:
    """Uniformly random legal moves from ``random.Random(seed)``."""

    def __init__(self, *, seed: int = 0, name: str = "random") -> None:
        self.name = name
        self._rng = random.Random(seed)

    def new_game(self, slot: int) -> None:
        """Nothing is kept per game."""

    def select_moves(self, games: Sequence[Game], slots: Sequence[int]) -> list[str]:
        return [self._rng.choice(_legal_or_raise(game, self.name)) for game in games]

    def close(self) -> None:
        """Nothing to release."""


class GreedyPlayer:
    """One-ply material greed with checkmate first and a seeded random tie-break.

    ``random_share`` (0..1) replaces that share of moves by a uniformly random
    legal move (same seeded generator): a reproducible rung between the
    random mover and plain greed.
    """

    def __init__(self, *, seed: int = 0, name: str = "greedy", random_share: float = 0.0) -> None:
        if not 0.0 <= random_share <= 1.0:
            raise ValueError(f"random_share must lie in [0, 1], got {random_share!r}")
        self.name = name
        self.random_share = random_share
        self._rng = random.Random(seed)

    def new_game(self, slot: int) -> None:
        """Nothing is kept per game."""

    def select_moves(self, games: Sequence[Game], slots: Sequence[int]) -> list[str]:
        return [self._choose(game) for game in games]

    def close(self) -> None:
        """Nothing to release."""

    def _choose(self, game: Game) -> str:
        legal = _legal_or_raise(game, self.name)
        if self.random_share > 0 and self._rng.random() < self.random_share:
            return self._rng.choice(legal)
        mover = game.turn
        best: list[str] = []
        best_value = -(10**9)
        for move in legal:
            child = game.copy()
            child.push_uci(move)
            outcome = child.outcome()
            if outcome is not None and outcome.winner == mover:
                value = 10**6  # checkmate beats any material
            else:
                value = material_balance(child.fen(), mover)
            if value > best_value:
                best, best_value = [move], value
            elif value == best_value:
                best.append(move)
        return self._rng.choice(best)


class StockfishPlayer:
    """Stockfish at a fixed node budget through python-chess's UCI client.

    ``engines`` processes are started lazily (``Threads`` 1 each) and shared by
    slot: slot ``s`` always uses engine ``s % engines``, and the engines of a
    batch search in parallel threads. An engine receives ``ucinewgame`` (hash
    and history cleared) whenever a new game starts in one of its slots, so a
    match is reproducible for a fixed concurrency and engine count.
    ``random_share`` (0..1) replaces that share of moves, drawn from
    ``random.Random(seed)`` in batch order, by a uniformly random legal move:
    a reproducible way to weaken it. ``skill_level`` (0-20) also weakens
    Stockfish but makes it non-deterministic.

    Note that Stockfish 15.1 always completes its first iterations, so any
    ``nodes`` up to about 50 plays the same moves (depth 2, ~47 nodes).
    """

    def __init__(
        self,
        *,
        nodes: int,
        skill_level: int | None = None,
        random_share: float = 0.0,
        seed: int = 0,
        engines: int = 2,
        hash_mb: int = 16,
        path: str = STOCKFISH_PATH,
        name: str | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {nodes!r}")
        if skill_level is not None and not 0 <= skill_level <= 20:
            raise ValueError(f"skill_level must lie in 0..20, got {skill_level!r}")
        if not 0.0 <= random_share <= 1.0:
            raise ValueError(f"random_share must lie in [0, 1], got {random_share!r}")
        if engines < 1:
            raise ValueError(f"engines must be at least 1, got {engines!r}")
        if hash_mb < 1:
            raise ValueError(f"hash_mb must be at least 1, got {hash_mb!r}")
        self.name = name or (
            f"sf-n{nodes}"
            + (f"-s{skill_level}" if skill_level is not None else "")
            + (f"-r{round(100 * random_share)}" if random_share > 0 else "")
        )
        self.nodes = nodes
        self.skill_level = skill_level
        self.random_share = random_share
        self._rng = random.Random(seed)
        self._path = path
        self._hash_mb = hash_mb
        self._engines: list[chess.engine.SimpleEngine | None] = [None] * engines
        self._tokens: list[object] = [object() for _ in range(engines)]
        self._boards: dict[int, tuple[str, chess.Board]] = {}
        self._pool = ThreadPoolExecutor(max_workers=engines, thread_name_prefix=self.name)
        self._closed = False

    def new_game(self, slot: int) -> None:
        self._boards.pop(slot, None)
        self._tokens[slot % len(self._engines)] = object()

    def select_moves(self, games: Sequence[Game], slots: Sequence[int]) -> list[str]:
        if self._closed:
            raise RuntimeError(f"{self.name} is closed")
        if len(games) != len(slots):
            raise ValueError(f"got {len(games)} games but {len(slots)} slots")
        moves: list[str] = [""] * len(games)
        groups: dict[int, list[int]] = {}
        for index, slot in enumerate(slots):
            if self.random_share > 0 and self._rng.random() < self.random_share:
                moves[index] = self._rng.choice(_legal_or_raise(games[index], self.name))
                continue
            groups.setdefault(slot % len(self._engines), []).append(index)

        def work(engine_index: int, indices: list[int]) -> None:
            for i in indices:
                moves[i] = self._search(engine_index, slots[i], games[i])

        futures = [self._pool.submit(work, e, idx) for e, idx in sorted(groups.items())]
        for future in futures:
            future.result()
        return moves

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True)
        for engine in self._engines:
            if engine is not None:
                engine.quit()
        self._engines = [None] * len(self._engines)

    def __enter__(self) -> StockfishPlayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _engine(self, index: int) -> chess.engine.SimpleEngine:
        engine = self._engines[index]
        if engine is None:
            try:
                engine = chess.engine.SimpleEngine.popen_uci(self._path)
            except FileNotFoundError as error:
                raise FileNotFoundError(f"Stockfish binary not found at {self._path!r}") from error
            options: dict[str, int] = {"Threads": 1, "Hash": self._hash_mb}
            if self.skill_level is not None:
                options["Skill Level"] = self.skill_level
            engine.configure(options)
            self._engines[index] = engine
        return engine

    def _board(self, slot: int, game: Game) -> chess.Board:
        """python-chess mirror of the referee's game (history included), synced incrementally."""
        start, moves = game.start_fen(), game.moves()
        start_fen, board = self._boards.get(slot, ("", chess.Board()))
        if (
            start_fen != start
            or len(board.move_stack) > len(moves)
            or [m.uci() for m in board.move_stack] != moves[: len(board.move_stack)]
        ):
            board = chess.Board(start)
            self._boards[slot] = (start, board)
        for uci in moves[len(board.move_stack) :]:
            board.push(chess.Move.from_uci(uci))
        return board

    def _search(self, engine_index: int, slot: int, game: Game) -> str:
        board = self._board(slot, game)  # slots of one engine are searched by one thread
        engine = self._engine(engine_index)
        result = engine.play(
            board, chess.engine.Limit(nodes=self.nodes), game=self._tokens[engine_index]
        )
        if result.move is None:
            raise RuntimeError(f"{self.name} returned no move for {game.fen()}")
        return result.move.uci()
