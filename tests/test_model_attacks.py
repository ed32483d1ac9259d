"""Attacked-square planes computed inside the network (sizes "BxC-at", recipe
key model.attack_planes; issue 22): the planes against python-chess, the size
grammar, the stem's wiring, folding, INT8 publication on ONNX Runtime, growth
and the recipe key."""

from __future__ import annotations

import chess
import numpy as np
import pytest
import torch
from publish_support import (  # noqa: F401
    assert_integer_kernels_agree,
    calibration,
    legal_kl,
    one_thread,
    published_and_rebuilt,
    trained_net,
)
from search_support import random_boards

from chesszero import core
from chesszero.config import ConfigError, load_config, parse_overrides
from chesszero.config.sizes import ModelSize, parse_size
from chesszero.model import ChessNet
from chesszero.model.attacks import AttackPlanes
from chesszero.model.grow import grow
from chesszero.publish.export import Provenance, export_onnx
from chesszero.publish.fold import fold_network
from chesszero.publish.quantize import quantize_network
from chesszero.publish.runtime import OrtRuntime


def _reference(board: chess.Board) -> np.ndarray:
    """``[2, 8, 8]`` from python-chess: whether any piece of the side to move / the
    opponent attacks each square with the enemy king lifted off the board, in
    SPEC 1's canonical coordinates (ranks reflected for Black)."""
    out = np.zeros((2, 8, 8), np.float32)
    for side, color in ((0, board.turn), (1, not board.turn)):
        lifted = board.copy(stack=False)
        king = lifted.king(not color)
        if king is not None:
            lifted.remove_piece_at(king)
        for square in chess.SQUARES:
            rank = chess.square_rank(square)
            row = rank if board.turn == chess.WHITE else 7 - rank
            out[side, row, chess.square_file(square)] = float(bool(lifted.attackers(color, square)))
    return out




def _attacks(boards: list[chess.Board]) -> np.ndarray:
    planes = core.encode_batch([core.Game(board.fen()) for board in boards])
    with torch.no_grad():
        return AttackPlanes()(torch.from_numpy(planes)).numpy()


def test_the_planes_are_python_chess_attacks_on_random_games() -> None:
    boards = random_boards(200, seed=3, max_plies=160)
    got = _attacks(boards)
    for board, planes in zip(boards, got, strict=True):
        np.testing.assert_array_equal(planes, _reference(board), err_msg=board.fen())


@pytest.mark.parametrize(
    ("fen", "side", "square", "attacked"),
    [
        # Rook a1 checks the king on e1: f1 behind the king is attacked (the king
        # cannot step back along the line); from Black's view rank 1 is row 7.
        ("8/8/8/8/8/8/8/R3k2K b - - 0 1", 1, chess.F1, True),
        # The same line blocked by a black knight on c1: f1 is not attacked.
        ("8/8/8/8/8/8/8/R1n1k2K b - - 0 1", 1, chess.F1, False),
        # A white pawn on e4 attacks d5 and f5, not e5 (White to move: own side).
        ("4k3/8/8/8/4P3/8/8/4K3 w - - 0 1", 0, chess.D5, True),
        ("4k3/8/8/8/4P3/8/8/4K3 w - - 0 1", 0, chess.E5, False),
        # A black pawn on d5 attacks e4 (White to move: the opponent's).
        ("4k3/8/8/3p4/8/8/8/4K3 w - - 0 1", 1, chess.E4, True),
    ],
)
def test_lines_through_the_king_and_pawn_captures(fen: str, side: int, square: int, attacked: bool) -> None:
    board = chess.Board(fen)
    planes = _attacks([board])[0]
    rank = chess.square_rank(square)
    row = rank if board.turn == chess.WHITE else 7 - rank
    assert (planes[side, row, chess.square_file(square)] > 0) == attacked


def test_a_stalemated_king_has_no_flight_square() -> None:
    """Black to move, stalemated: every square next to its king is attacked by
    White or holds a black piece -- what the planes let a network see."""
    board = chess.Board("k7/2Q5/1K6/8/8/8/8/8 b - - 0 1")
    assert board.is_stalemate()
    planes = _attacks([board])[0]
    own = core.encode_batch([core.Game(board.fen())])[0][16]
    king = board.king(chess.BLACK)
    for square in chess.SquareSet(chess.BB_KING_ATTACKS[king]):
        row, col = 7 - chess.square_rank(square), chess.square_file(square)
        assert planes[1, row, col] >= 1.0 or own[row, col] == 1.0


@pytest.mark.parametrize(("text", "size"), [("4x48-at", ModelSize(4, 48, 0, True)),
                                            ("4x48-se4-at", ModelSize(4, 48, 4, True)),
                                            (" 6X64 - AT ", ModelSize(6, 64, 0, True)),
                                            ("4x48", ModelSize(4, 48))])
def test_sizes_spell_the_attack_planes(text: str, size: ModelSize) -> None:
    assert parse_size(text) == size
    assert parse_size(size.name) == size
    assert size.plain == (not size.attacks and not size.se_ratio)


@pytest.mark.parametrize("text", ["4x48-at-se4", "4x48at", "4x48-att"])
def test_misspelt_sizes_are_refused_naming_the_input(text: str) -> None:
    with pytest.raises(ValueError, match=f"-at.*{text}"):
        parse_size(text)


def test_the_stem_reads_two_more_planes_and_the_state_has_no_new_keys() -> None:
    plain, net = ChessNet("2x16"), ChessNet("2x16-at")
    assert net.stem_conv.in_channels == plain.stem_conv.in_channels + 2 == core.NUM_PLANES + 2
    assert set(net.state_dict()) == set(plain.state_dict())
    planes = torch.from_numpy(calibration().planes[:16].copy())
    net.eval()
    with torch.no_grad():
        base = net(planes).policy
        net.stem_conv.weight[:, core.NUM_PLANES :] += 0.5
        moved = net(planes).policy
    assert (moved - base).abs().max() > 1e-3  # the attack planes reach the outputs


@pytest.fixture(scope="module")
def at_net() -> ChessNet:
    """A briefly trained 2x16-at network (cached by publish_support)."""
    return trained_net("2x16-at")


@pytest.mark.parametrize("int8_stem", [False, True])
def test_folded_and_int8_networks_on_onnx_runtime(at_net: ChessNet, int8_stem: bool, tmp_path) -> None:
    """The folded network computes the training network's outputs; the INT8
    export runs the attack planes in float ahead of the stem, ONNX Runtime
    computes what the fake-quantised network simulates, and the INT8 network
    stays close to its source."""
    calib = calibration()
    planes = torch.from_numpy(calib.planes.copy())
    float_net = fold_network(at_net, int8_stem=int8_stem)
    assert float_net.attacks is not None
    with torch.no_grad():
        out = at_net(planes)
        policy, wdl = float_net(planes)
    torch.testing.assert_close(policy, out.policy, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(wdl, out.wdl.softmax(dim=1), atol=2e-6, rtol=1e-5)
    int8 = quantize_network(float_net, calib)
    artifact = export_onnx(int8, tmp_path / "int8.onnx", Provenance("c", calib.sha256, len(calib)))
    assert artifact.metadata.network_size == "2x16-at"
    ort_policy, ort_wdl = OrtRuntime(threads=1).build(artifact).evaluate(calib.planes)
    with torch.no_grad():
        sim_policy, sim_wdl = (t.numpy() for t in int8(planes))
    assert_integer_kernels_agree(sim_policy, ort_policy, calib.legal)
    assert np.abs(ort_wdl - sim_wdl).mean() < 1e-4
    assert legal_kl(out.policy.numpy(), ort_policy, calib.legal).mean() < 0.01


def test_a_network_with_attack_planes_publishes_and_rebuilds(at_net: ChessNet, tmp_path) -> None:
    for state, ort_wdl, rebuilt_wdl in published_and_rebuilt(at_net, tmp_path / "gen"):
        assert state.size.name == "2x16-at" and state.attacks is not None
        np.testing.assert_allclose(rebuilt_wdl, ort_wdl, atol=1e-3)


def test_growth_keeps_the_attack_planes(at_net: ChessNet) -> None:
    grown = grow(at_net, "3x24-at").eval()
    planes = torch.from_numpy(calibration().planes[:32].copy())
    with torch.no_grad():
        torch.testing.assert_close(grown(planes).policy, at_net(planes).policy, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="attack planes cannot be added"):
        grow(ChessNet("2x16"), "3x24-at")


def test_the_recipe_key_gives_every_size_of_the_campaign_attack_planes() -> None:
    cfg = load_config(preset="cpu", overrides=parse_overrides(["model.attack_planes=true"]))
    assert [s.name for s in cfg.network_sizes()] == ["4x48-at", "6x64-at"]
    assert cfg.model.shape == ModelSize(4, 48, 0, True)
    assert load_config(preset="cpu").model.attack_planes is False
    with pytest.raises(ConfigError, match="model.attack_planes"):
        load_config(preset="cpu", overrides=parse_overrides(["model.size=4x48-at"]))
