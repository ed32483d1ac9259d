"""Paired matches between two players, refereed by the native core (SPEC 10).

``play_match(first, second, openings)`` plays every opening twice, ``first``
(the model) as White in game ``2i`` and as Black in game ``2i + 1``. Up to
``concurrency`` games are in flight, in numbered slots; on every step each
in-flight game advances one ply, and each player gets one ``select_moves``
call with all the games where it is to move, so a batching player evaluates
them together. A game ends by the rules of ``chesszero.core.Game`` (checkmate,
stalemate, insufficient material, threefold repetition, fifty moves) or at
``max_plies`` plies counted from the start position (opening moves included),
which scores a draw. Every score is from ``first``'s point of view.

The result (``MatchResult``) holds every game's moves, so it yields W/D/L, the
score, the pentanomial of opening pairs, PGN, an Elo estimate, the final
material balance and the conversion count (``chesszero.material``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone

from chesszero import core
from chesszero.evaluate.elo import EloEstimate, pentanomial_from_pair_scores, rate
from chesszero.evaluate.mates import MateInOne, mates_in_one
from chesszero.evaluate.openings import Opening
from chesszero.evaluate.pgn import PLY_CAP, game_pgn
from chesszero.evaluate.players import Player
from chesszero.material import (  # noqa: F401  (PIECE_PAWNS, material_of_fen: re-exported)
    PIECE_PAWNS,
    Conversion,
    conversion_of,
    material_of_fen,
    material_swing,
)

DEFAULT_MAX_PLIES = 300


class MatchCancelledError(RuntimeError):
    """The match's cancel event was set before all games finished."""


class IllegalMovePlayedError(ValueError):
    """A player answered with a move the referee does not accept."""


@dataclass(frozen=True)
class GameRecord:
    """One finished game; ``score`` is from the first player's point of view."""

    index: int
    opening_id: str
    first_is_white: bool
    start_fen: str
    moves: tuple[str, ...]
    book_plies: int
    result: str
    termination: str
    score: float

    @property
    def pair(self) -> int:
        """Index of the opening pair this game belongs to."""
        return self.index // 2

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "opening_id": self.opening_id,
            "first_is_white": self.first_is_white,
            "start_fen": self.start_fen,
            "moves": " ".join(self.moves),
            "book_plies": self.book_plies,
            "result": self.result,
            "termination": self.termination,
            "score": self.score,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> GameRecord:
        values = dict(data)
        values["moves"] = tuple(str(values["moves"]).split())
        return cls(**values)  # type: ignore[arg-type]


@dataclass
class MatchResult:
    """All games of a paired match between ``first`` and ``second``."""

    first: str
    second: str
    max_plies: int
    started: str
    finished: str
    games: list[GameRecord] = field(default_factory=list)
    event: str = ""

    @property
    def wins(self) -> int:
        return sum(1 for g in self.games if g.score == 1.0)

    @property
    def draws(self) -> int:
        return sum(1 for g in self.games if g.score == 0.5)

    @property
    def losses(self) -> int:
        return sum(1 for g in self.games if g.score == 0.0)

    @property
    def score(self) -> float:
        """Mean game score of ``first`` (0 when no game was played)."""
        return sum(g.score for g in self.games) / len(self.games) if self.games else 0.0

    def final_material(self) -> float:
        """Mean material balance (pawns: P 1, N/B 3, R 5, Q 9) of ``first``
        where the games ended. With scores near 0.5 it tells a player that
        wins material but cannot convert (reference 004's draw cycle) from
        one that plays even games."""
        if not self.games:
            return 0.0
        total = sum(
            material_swing(g.start_fen, g.moves).final_for(g.first_is_white) for g in self.games
        )
        return total / len(self.games)

    def conversion(self) -> Conversion:
        """Games in which ``first`` was ahead by ``CONVERSION_LEAD`` (5) pawns or
        more at some position (start and book plies included), and how many of
        those it won; ``.rate`` is None without such a game. A game counts
        once however often the lead came and went."""
        total = Conversion()
        for g in self.games:
            swing = material_swing(g.start_fen, g.moves)
            total += conversion_of(swing, g.first_is_white, g.score == 1.0)
        return total

    def mates_in_one(self) -> MateInOne:
        """Turns of ``first`` after the book with a mate in one on the board,
        and how many of them it mated on (``evaluate.mates``)."""
        total = MateInOne()
        for g in self.games:
            total += mates_in_one(g.start_fen, g.moves, white=g.first_is_white, skip=g.book_plies)
        return total

    def pair_scores(self) -> list[float]:
        """Score (0..2) of each opening pair, in opening order."""
        by_pair: dict[int, list[float]] = {}
        for g in self.games:
            by_pair.setdefault(g.pair, []).append(g.score)
        incomplete = [p for p, s in by_pair.items() if len(s) != 2]
        if incomplete:
            raise ValueError(f"opening pairs {incomplete} do not have exactly two games")
        return [sum(by_pair[p]) for p in sorted(by_pair)]

    def pentanomial(self) -> tuple[int, int, int, int, int]:
        """Counts of opening pairs scoring 0, 0.5, 1, 1.5, 2."""
        return pentanomial_from_pair_scores(self.pair_scores())

    def elo(self, anchor: float, *, seed: int | None = 0, resamples: int = 10_000) -> EloEstimate:
        """Rating of ``first`` given ``second`` is rated ``anchor``."""
        return rate(self.pentanomial(), anchor, seed=seed, resamples=resamples)

    def summary(self) -> str:
        return (
            f"{self.first} vs {self.second}: +{self.wins} ={self.draws} -{self.losses} "
            f"score {self.score:.3f} pentanomial {list(self.pentanomial())}"
        )

    def pgn(self) -> str:
        """All games as one PGN text (games separated by blank lines)."""
        date = self.started[:10].replace("-", ".")
        texts = []
        for g in self.games:
            white, black = (
                (self.first, self.second) if g.first_is_white else (self.second, self.first)
            )
            texts.append(
                game_pgn(
                    start_fen=g.start_fen,
                    moves=list(g.moves),
                    book_plies=g.book_plies,
                    white=white,
                    black=black,
                    result=g.result,
                    termination=g.termination,
                    event=self.event or f"{self.first} vs {self.second}",
                    round_label=f"{g.pair + 1}.{g.index % 2 + 1}",
                    date=date,
                    opening_id=g.opening_id,
                )
            )
        return "\n\n".join(texts) + "\n"

    def to_dict(self) -> dict[str, object]:
        return {
            "first": self.first,
            "second": self.second,
            "event": self.event,
            "max_plies": self.max_plies,
            "started": self.started,
            "finished": self.finished,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "score": self.score,
            "pentanomial": list(self.pentanomial()),
            "games": [g.to_dict() for g in self.games],
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> MatchResult:
        games = data.get("games", [])
        if not isinstance(games, list):
            raise ValueError(f"'games' must be a list, got {type(games).__name__}")
        return cls(
            first=str(data["first"]),
            second=str(data["second"]),
            event=str(data.get("event", "")),
            max_plies=int(data["max_plies"]),  # type: ignore[call-overload]
            started=str(data["started"]),
            finished=str(data["finished"]),
            games=[GameRecord.from_dict(g) for g in games],
        )


@dataclass
class _Live:
    index: int
    opening: Opening
    first_is_white: bool
    game: core.Game


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _start(index: int, opening: Opening) -> _Live:
    game = core.Game(opening.start_fen)
    for uci in opening.moves:
        game.push_uci(uci)
    if game.outcome() is not None:
        raise ValueError(f"opening {opening.id!r} ends the game: {game.fen()}")
    return _Live(index=index, opening=opening, first_is_white=index % 2 == 0, game=game)


def _finish(live: _Live, max_plies: int) -> GameRecord | None:
    game = live.game
    outcome = game.outcome()
    moves = game.moves()
    if outcome is not None:
        result, termination = outcome.result, outcome.termination.name.lower()
        score = outcome.score_for(live.first_is_white)
    elif len(moves) >= max_plies:
        result, termination, score = "1/2-1/2", PLY_CAP, 0.5
    else:
        return None
    return GameRecord(
        index=live.index,
        opening_id=live.opening.id,
        first_is_white=live.first_is_white,
        start_fen=game.start_fen(),
        moves=tuple(moves),
        book_plies=len(live.opening.moves),
        result=result,
        termination=termination,
        score=score,
    )


def _ask(player: Player, batch: list[tuple[int, _Live]]) -> None:
    """One batched call to ``player``; pushes its moves after checking them."""
    if not batch:
        return
    games = [live.game for _, live in batch]
    plies = [len(g.moves()) for g in games]
    moves = player.select_moves(games, [slot for slot, _ in batch])
    if len(moves) != len(batch):
        raise ValueError(f"{player.name} returned {len(moves)} moves for {len(batch)} games")
    for game, ply, move in zip(games, plies, moves, strict=True):
        if len(game.moves()) != ply:
            raise RuntimeError(f"{player.name} modified the referee's game: {game.fen()}")
        if move not in game.legal_uci():
            raise IllegalMovePlayedError(
                f"{player.name} played illegal move {move!r} in {game.fen()}"
            )
        game.push_uci(move)


def play_match(
    first: Player,
    second: Player,
    openings: Sequence[Opening],
    *,
    max_plies: int = DEFAULT_MAX_PLIES,
    concurrency: int = 8,
    event: str = "",
    cancel: threading.Event | None = None,
    on_game: Callable[[GameRecord], None] | None = None,
    parallel_players: bool = True,
) -> MatchResult:
    """Play each opening twice with colours reversed; see the module docstring.

    With ``parallel_players`` the two players' calls of a step run in two
    threads (each player is still called by one thread at a time), so two
    Stockfish players use two cores. Raises ``MatchCancelledError`` when ``cancel`` is set, and
    ``IllegalMovePlayedError`` when a player's move is refused by the referee.
    """
    if not openings:
        raise ValueError("a match needs at least one opening")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
    if max_plies < 1:
        raise ValueError(f"max_plies must be at least 1, got {max_plies!r}")
    too_long = [o.id for o in openings if len(o.moves) >= max_plies]
    if too_long:
        raise ValueError(f"openings {too_long} are as long as max_plies={max_plies}")
    started = _now()
    queue = [(i, openings[i // 2]) for i in range(2 * len(openings))]
    queue.reverse()
    slots: list[_Live | None] = [None] * concurrency
    records: list[GameRecord] = []
    helper = ThreadPoolExecutor(max_workers=1) if parallel_players else None
    try:
        _run(first, second, queue, slots, records, max_plies, helper, cancel, on_game)
    finally:
        if helper is not None:
            helper.shutdown(wait=True)
    records.sort(key=lambda r: r.index)
    return MatchResult(
        first=first.name,
        second=second.name,
        event=event,
        max_plies=max_plies,
        started=started,
        finished=_now(),
        games=records,
    )


def _run(
    first: Player,
    second: Player,
    queue: list[tuple[int, Opening]],
    slots: list[_Live | None],
    records: list[GameRecord],
    max_plies: int,
    helper: ThreadPoolExecutor | None,
    cancel: threading.Event | None,
    on_game: Callable[[GameRecord], None] | None,
) -> None:
    concurrency = len(slots)
    while queue or any(live is not None for live in slots):
        if cancel is not None and cancel.is_set():
            raise MatchCancelledError(f"{first.name} vs {second.name} cancelled")
        for slot in range(concurrency):
            if slots[slot] is None and queue:
                slots[slot] = _start(*queue.pop())
                first.new_game(slot)
                second.new_game(slot)
        active = [(slot, live) for slot, live in enumerate(slots) if live is not None]
        first_batch = [(s, g) for s, g in active if g.game.turn == g.first_is_white]
        second_batch = [(s, g) for s, g in active if g.game.turn != g.first_is_white]
        if helper is not None and first_batch and second_batch:
            pending = helper.submit(_ask, second, second_batch)
            _ask(first, first_batch)
            pending.result()
        else:
            _ask(first, first_batch)
            _ask(second, second_batch)
        for slot, live in active:
            record = _finish(live, max_plies)
            if record is not None:
                records.append(record)
                slots[slot] = None
                if on_game is not None:
                    on_game(record)
