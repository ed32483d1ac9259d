"""The second source of positions: games of the alpha-beta search itself.

Each game opens with ``random_plies`` random legal moves (seeded by the game's
number), then the native alpha-beta (``nnue.native.Searcher``, over a student
network or the control evaluator) plays both sides to its depth/node limit
until the game ends or ``max_plies`` plies have been played. Every searched
position whose chosen move is quiet (``positions.quiet``: the search's move
stands in for the teacher's here) becomes a row; its result is the game's
(NaN for a game stopped at ``max_plies``: the target then takes the teacher
alone) and its search score is the one the search reported for the move
(``search_cp``; mates as +-``CP_CLIP``, NaN when the search reported none):
the search labels of ``nnue.search_label_weight`` (docs/nnue.md section 8). Games run on ``threads`` threads (the search releases the GIL), each
with its own searcher; results are gathered in game order, so the rows do not
depend on the thread count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chesszero import core
from chesszero.nnue import native
from chesszero.nnue.positions import CP_CLIP, SOURCE_SEARCH, PositionRows

__all__ = ["SearchGameSettings", "play_search_games", "score_cp", "search_scores"]


SCORE_HASH_MB = 2
"""Hash table of each labelling search (``search_scores``): cleared per position, so kept small."""


@dataclass(frozen=True)
class SearchGameSettings:
    games: int
    net: Path | None  # None: the control evaluator
    depth: int
    nodes: int
    random_plies: int
    max_plies: int
    threads: int
    seed: int

    def __post_init__(self) -> None:
        if not (self.depth or self.nodes):
            raise ValueError("search games need a depth and/or node limit per move")


@dataclass(frozen=True)
class _Played:
    start_fen: str
    moves: tuple[str, ...]
    searched_from: int  # plies of random opening
    white_score: float  # NaN when unfinished
    scores: tuple[float, ...]  # the search's score of each searched ply, side to move's view (NaN: none)


def score_cp(found: native.SearchMove) -> float:
    """A search's score in centipawns from the side to move's view: mates as +-``CP_CLIP``, NaN when none."""
    if found.mate is not None:
        return CP_CLIP if found.mate > 0 else -CP_CLIP
    return float("nan") if found.score_cp is None else float(found.score_cp)


def _opening(seed: int, plies: int) -> core.Game:
    rng = np.random.default_rng(seed)
    for attempt in range(100):
        game = core.Game()
        for _ in range(plies):
            legal = game.legal_uci()
            if not legal:
                break
            game.push_uci(str(legal[int(rng.integers(len(legal)))]))
        if not game.is_game_over():
            return game
        rng = np.random.default_rng([seed, attempt + 1])
    raise RuntimeError(f"no playable random opening of {plies} plies for seed {seed}")


def _play_one(index: int, settings: SearchGameSettings, searcher: native.Searcher) -> _Played:
    game = _opening(settings.seed * 1_000_003 + index, settings.random_plies)
    opening = len(game.moves())
    searcher.clear()
    scores: list[float] = []
    while not game.is_game_over() and len(game.moves()) - opening < settings.max_plies:
        found = searcher.search(game.start_fen(), game.moves(), depth=settings.depth, nodes=settings.nodes)
        if found.best is None:
            break
        scores.append(score_cp(found))
        game.push_uci(found.best)
    outcome = game.outcome()
    white = float("nan") if outcome is None else outcome.score_for(True)
    return _Played(game.start_fen(), tuple(game.moves()), opening, white, tuple(scores))


def play_search_games(settings: SearchGameSettings, rows: PositionRows, *,
                      on_game: Callable[[int], None] | None = None) -> int:
    """Plays ``settings.games`` games and offers their searched positions to ``rows``; returns games played."""
    net = None if settings.net is None else native.NativeNet(settings.net)
    local = threading.local()

    def play(index: int) -> _Played:
        if not hasattr(local, "searcher"):
            local.searcher = native.Searcher(net)
        played = _play_one(index, settings, local.searcher)
        if on_game is not None:
            on_game(1)
        return played

    with ThreadPoolExecutor(max_workers=settings.threads) as pool:
        games = list(pool.map(play, range(settings.games)))
    for played in games:
        game = core.Game(played.start_fen)
        for uci in played.moves[:played.searched_from]:
            game.push_uci(uci)
        for uci, cp in zip(played.moves[played.searched_from:], played.scores, strict=True):
            score = played.white_score
            rows.offer(game, uci, score if game.turn else 1.0 - score, SOURCE_SEARCH, cp)
            game.push_uci(uci)
    return len(games)


def search_scores(settings: SearchGameSettings, fens: list[str], *,
                  on_batch: Callable[[int], None] | None = None, chunk: int = 256) -> np.ndarray:
    """The search's score (``score_cp``) of each FEN with ``settings``' network and limits, float32 ``[n]``.

    Each position is searched on its own (a cleared hash table, no history), in chunks over
    ``settings.threads`` threads; the result does not depend on the thread count.
    """
    net = None if settings.net is None else native.NativeNet(settings.net)
    local = threading.local()
    out = np.full(len(fens), np.nan, np.float32)

    def run(start: int) -> None:
        if not hasattr(local, "searcher"):
            local.searcher = native.Searcher(net, hash_mb=SCORE_HASH_MB)
        stop = min(start + chunk, len(fens))
        for i in range(start, stop):
            local.searcher.clear()
            out[i] = score_cp(local.searcher.search(fens[i], [], depth=settings.depth, nodes=settings.nodes))
        if on_batch is not None:
            on_batch(stop - start)

    with ThreadPoolExecutor(max_workers=settings.threads) as pool:
        list(pool.map(run, range(0, len(fens), chunk)))
    return out
