"""The page's JavaScript encoder (web/src/encoding.js) against the native core.

Planes (as the SHA-256 of their float32 bytes, with the differing planes
named on a mismatch) and sorted legal action ids agree on all 516 calibration
positions and on every position of seeded random games (about 3,000), run
under Node.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from web_support import node_encode, planes_sha256

from chesszero import core
from chesszero.config import REPO_ROOT
from chesszero.publish.calibration_positions import DEFAULT_POSITIONS, load_positions


def native(start_fen: str, moves: list[str], plies: list[int]) -> list[tuple[np.ndarray, list[int]]]:
    game = core.Game(start_fen)
    out = []
    wanted = set(plies)
    for k in range(len(moves) + 1):
        if k in wanted:
            out.append((game.encode().copy(), sorted(int(a) for a in game.legal_actions())))
        if k < len(moves):
            game.push_uci(moves[k])
    return out


def random_games(n: int, seed: int, max_plies: int = 120) -> list[dict]:
    """Seeded random games, every position of each checked (promotions, castling,
    en passant and repetitions show up over a few thousand positions)."""
    rng = random.Random(seed)
    games = []
    for _ in range(n):
        game = core.Game()
        moves: list[str] = []
        for _ in range(rng.randint(10, max_plies)):
            legal = game.legal_uci()
            if not legal or game.is_game_over():
                break
            move = rng.choice(sorted(legal))
            game.push_uci(move)
            moves.append(move)
        games.append({"start_fen": core.STARTING_FEN, "moves": moves, "plies": list(range(len(moves) + 1))})
    return games


def compare(games: list[dict]) -> tuple[int, list[str]]:
    """(positions checked, mismatch descriptions) of the JavaScript encoder against the core."""
    got = node_encode(games)
    bad: list[str] = []
    checked = 0
    rows = iter(got)
    suspects = []
    for index, g in enumerate(games):
        for (planes, legal), ply in zip(native(g["start_fen"], g["moves"], g["plies"]), g["plies"], strict=True):
            row = next(rows)
            assert row["ply"] == ply
            checked += 1
            if row["legal"] != legal:
                bad.append(f"game {index} ply {ply}: legal ids differ: js-only "
                           f"{sorted(set(row['legal']) - set(legal))}, core-only {sorted(set(legal) - set(row['legal']))}")
            if row["sha256"] != planes_sha256(planes):
                suspects.append((index, ply, planes))
    assert next(rows, None) is None
    for index, ply, planes in suspects[:5]:  # name the planes that differ
        g = dict(games[index], plies=[ply], full=True)
        js = np.asarray(node_encode([g])[0]["planes"], dtype=np.float32).reshape(planes.shape)
        differ = sorted({int(p) for p in np.nonzero(js != planes)[0]})
        bad.append(f"game {index} ply {ply}: planes {differ} differ")
    bad += [f"... and {len(suspects) - 5} more positions with different planes"] if len(suspects) > 5 else []
    return checked, bad


def calibration_games() -> list[dict]:
    """The calibration positions as games: positions sampled from one game share
    a replay (the longest), each checked at its own ply."""
    games: list[dict] = []
    for p in sorted(load_positions(REPO_ROOT / DEFAULT_POSITIONS), key=lambda p: -len(p.moves)):
        moves = list(p.moves)
        home = next((g for g in games if g["start_fen"] == p.start_fen and g["moves"][: len(moves)] == moves), None)
        if home is None:
            games.append({"start_fen": p.start_fen, "moves": moves, "plies": [len(moves)]})
        else:
            home["plies"] = sorted(set(home["plies"]) | {len(moves)})
    return games


def test_calibration_positions_encode_as_in_the_core() -> None:
    checked, bad = compare(calibration_games())
    assert checked == 516
    assert bad == []


@pytest.mark.parametrize("seed", [0])
def test_random_positions_encode_as_in_the_core(seed: int) -> None:
    checked, bad = compare(random_games(48, seed))
    print(f"JavaScript encoder: {checked} random positions agree with the native core")
    assert checked >= 2000
    assert bad == []


def test_the_comparison_sees_a_wrong_history() -> None:
    """A game replayed with a different move order reaches the same board with
    different history planes: the check must notice."""
    a = ["g1f3", "g8f6", "b1c3", "b8c6"]
    b = ["b1c3", "b8c6", "g1f3", "g8f6"]
    js = node_encode([{"start_fen": core.STARTING_FEN, "moves": b, "plies": [4]}])[0]
    (planes, legal), = native(core.STARTING_FEN, a, [4])
    assert js["legal"] == legal  # same board, same moves
    assert js["sha256"] != planes_sha256(planes)  # different history planes
