"""Encoding contract (SPEC 1-3): golden planes, an independent reference,
colour symmetry, packed rows, actions and file reflection."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest
from encoding_reference import action_table, reference_action, reference_planes

from chesszero import core


def random_board(seed: int, plies: int = 40) -> chess.Board:
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(rng.randrange(plies)):
        moves = list(board.legal_moves)
        if not moves or board.is_game_over(claim_draw=False):
            break
        board.push(rng.choice(moves))
    return board


def game_of(board: chess.Board) -> core.Game:
    root = board.root()
    game = core.Game(root.fen())
    for move in board.move_stack:
        game.push_uci(move.uci())
    return game


def test_constants() -> None:
    assert core.NUM_PLANES == 52
    assert core.NUM_ACTIONS == 1880
    assert core.PACKED_BYTES == 332
    assert core.Game().encode().shape == (52, 8, 8)
    assert core.Game().encode().dtype == np.float32


def test_start_position_golden() -> None:
    p = core.Game().encode()
    assert p[0].sum() == 8 and p[0, 1].sum() == 8  # own pawns on row 1
    assert p[5, 0, 4] == 1 and p[5].sum() == 1  # own king e1
    assert p[11, 7, 4] == 1 and p[11].sum() == 1  # opponent king e8
    assert all(p[i].min() == 1 for i in (12, 13, 14, 15))
    assert p[16, :2].sum() == 16 and p[17, 6:].sum() == 16
    assert p[18:38].sum() == 0
    assert p[38, 0, 0] == 0 and p[38, 0, 1] == 1 and p[38, 1, 0] == 1
    assert p[39].sum() == 0
    assert np.all(p[40:47] == 0)
    assert [p[47 + i, 0, 0] for i in range(5)] == [8, 2, 2, 2, 1]


def test_black_to_move_after_e4() -> None:
    g = core.Game()
    g.push_uci("e2e4")
    p = g.encode()
    assert p[0, 1].sum() == 8  # Black's own pawns on its row 1
    assert p[6, 4, 4] == 1  # white e4 pawn: rank 4 -> row 4 for Black
    assert p[6, 6].sum() == 7
    assert p[22, 6, 4] == 1 and p[22].sum() == 1  # origin e2 -> row 6
    assert p[23, 4, 4] == 1 and p[23].sum() == 1  # destination e4
    assert p[19].sum() == 0  # no legal en passant


def test_en_passant_plane_legal_and_not_legal() -> None:
    legal = core.Game("4k3/8/8/2pP4/8/8/8/4K3 w - c6 0 2").encode()
    assert legal[19, 5, 2] == 1 and legal[19].sum() == 1
    pinned = core.Game("8/8/8/KPp4r/8/8/8/7k w - c6 0 2")
    assert pinned.encode()[19].sum() == 0
    assert pinned.fen().split()[3] == "-"


def test_repetition_planes() -> None:
    g = core.Game()
    for move in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        g.push_uci(move)
    p = g.encode()
    assert p[20].min() == 1 and p[21].max() == 0
    for move in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        g.push_uci(move)
    p = g.encode()
    assert p[20].min() == 1 and p[21].min() == 1
    assert g.outcome().termination == core.Termination.THREEFOLD_REPETITION


def test_history_after_castling_marks_king_destination() -> None:
    g = core.Game("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    g.push_uci("e1g1")
    p = g.encode()  # Black to move: White's row 0 is Black's row 7
    assert p[22, 7, 4] == 1 and p[23, 7, 6] == 1
    assert p[12].min() == 1 and p[13].min() == 1  # Black keeps both rights
    assert p[14].max() == 0 and p[15].max() == 0  # White lost them


def test_opposite_coloured_bishops() -> None:
    assert core.Game("2b1k3/8/8/8/8/8/8/2B1K3 w - - 0 1").encode()[39].min() == 1
    assert core.Game("4kb2/8/8/8/8/8/8/2B1K3 w - - 0 1").encode()[39].max() == 0
    assert core.Game("2bbk3/8/8/8/8/8/8/2B1K3 w - - 0 1").encode()[39].max() == 0


def test_halfmove_cap_and_material() -> None:
    p = core.Game("4k3/8/8/8/8/8/8/R3K3 w - - 150 120").encode()
    assert p[46].min() == 100 and p[46].max() == 100
    assert p[43].min() == 1  # one more rook
    assert p[50].min() == 1 and p[47].max() == 0


def test_promotion_actions() -> None:
    g = core.Game("8/P6k/8/8/8/8/8/K7 w - - 0 1")
    actions = {}
    for uci in g.legal_uci():
        actions[uci] = g.action_of(uci)
    promos = {u: a for u, a in actions.items() if u.startswith("a7a8")}
    assert set(promos) == {"a7a8q", "a7a8r", "a7a8b", "a7a8n"}
    for uci, a in promos.items():
        assert core.action_info(a) == (48, 56, uci[-1])


@pytest.mark.parametrize("seed", range(150))
def test_planes_match_independent_reference(seed: int) -> None:
    board = random_board(seed, plies=120)
    game = game_of(board)
    np.testing.assert_array_equal(game.encode(), reference_planes(board))


def test_all_actions_distinct_and_table_matches_spec() -> None:
    infos = [core.action_info(a) for a in range(core.NUM_ACTIONS)]
    assert len(set(infos)) == 1880
    assert infos == action_table()
    counts = {"ray": 0, "knight": 0, "promo": 0}
    for f, t, promo in infos:
        if promo is not None:
            counts["promo"] += 1
        elif (abs(f // 8 - t // 8), abs(f % 8 - t % 8)) in ((1, 2), (2, 1)):
            counts["knight"] += 1
        else:
            counts["ray"] += 1
    assert counts == {"ray": 1456, "knight": 336, "promo": 88}


@pytest.mark.parametrize("seed", range(60))
def test_action_round_trip(seed: int) -> None:
    board = random_board(seed + 1000, plies=120)
    game = game_of(board)
    legal = game.legal_actions()
    assert len(set(legal.tolist())) == len(legal)
    mask = game.legal_mask()
    assert mask.sum() == len(legal) and mask[legal].all()
    for move in board.legal_moves:
        a = game.action_of(move.uci())
        assert a == reference_action(board, move)
        assert game.uci_of(a) == move.uci()
    illegal = next(a for a in range(core.NUM_ACTIONS) if not mask[a])
    with pytest.raises(core.IllegalMoveError):
        game.uci_of(illegal)


def test_reflection_is_an_involution_on_actions() -> None:
    table = core.mirror_action_table()
    assert sorted(table.tolist()) == list(range(1880))
    assert np.array_equal(table[table], np.arange(1880))
    for a in range(1880):
        f, t, promo = core.action_info(a)
        mf, mt, mpromo = core.action_info(int(table[a]))
        assert (mf, mt, mpromo) == (f ^ 7, t ^ 7, promo)
        assert core.mirror_action(a) == table[a]


def mirrored_game(board: chess.Board) -> tuple[core.Game, chess.Board]:
    root = board.root().transform(chess.flip_horizontal)
    mirrored = root.copy()
    game = core.Game(root.fen())
    for move in board.move_stack:
        m = chess.Move(move.from_square ^ 7, move.to_square ^ 7, move.promotion)
        game.push_uci(m.uci())
        mirrored.push(m)
    return game, mirrored


@pytest.mark.parametrize("seed", range(40))
def test_reflection_maps_legal_moves_and_planes(seed: int) -> None:
    rng = random.Random(seed)
    board = chess.Board("4k3/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1" if seed % 2 else
                        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1")
    for _ in range(rng.randrange(60)):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    game = game_of(board)
    mgame, _ = mirrored_game(board)
    table = core.mirror_action_table()
    assert sorted(table[game.legal_actions()].tolist()) == sorted(mgame.legal_actions().tolist())
    planes = game.encode()[None]
    np.testing.assert_array_equal(core.mirror_planes(planes)[0], mgame.encode())
    packed = game.encode_packed()[None]
    np.testing.assert_array_equal(core.mirror_packed(packed)[0], mgame.encode_packed())


@pytest.mark.parametrize("seed", range(40))
def test_colour_flipped_twin_encodes_identically(seed: int) -> None:
    board = random_board(seed + 5000, plies=80)
    twin_root = board.root().mirror()
    twin = core.Game(twin_root.fen())
    for move in board.move_stack:
        twin.push_uci(chess.Move(chess.square_mirror(move.from_square),
                                 chess.square_mirror(move.to_square), move.promotion).uci())
    np.testing.assert_array_equal(game_of(board).encode(), twin.encode())


def test_packed_rows_and_batches() -> None:
    games = [game_of(random_board(s, plies=60)) for s in range(32)]
    planes = core.encode_batch(games)
    assert planes.shape == (32, 52, 8, 8)
    for g, p in zip(games, planes, strict=True):
        np.testing.assert_array_equal(g.encode(), p)
    packed = core.encode_packed_batch(games)
    assert packed.shape == (32, 332) and packed.dtype == np.uint8
    np.testing.assert_array_equal(core.unpack_planes(packed), planes)
    out = np.empty((32, 52, 8, 8), dtype=np.float32)
    assert core.encode_batch(games, out) is out or np.shares_memory(core.encode_batch(games, out), out)
    np.testing.assert_array_equal(out, planes)


def test_batch_buffers_are_validated() -> None:
    games = [core.Game(), core.Game()]
    with pytest.raises(ValueError, match="shape"):
        core.encode_batch(games, np.empty((3, 52, 8, 8), dtype=np.float32))
    with pytest.raises(ValueError, match="float32"):
        core.encode_batch(games, np.empty((2, 52, 8, 8), dtype=np.float64))
    with pytest.raises(ValueError):
        core.encode_batch(games, np.empty((2, 52, 8, 8), dtype=np.float32)[:, ::-1])
    with pytest.raises(ValueError):
        core.unpack_planes(np.zeros((2, 331), dtype=np.uint8))
    with pytest.raises(TypeError):
        core.encode_batch([core.Game(), "not a game"])
