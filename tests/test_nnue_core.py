"""The native NNUE evaluator against its contract (docs/nnue.md): features
against an independent python-chess featurizer, incremental accumulators
against a refresh along random games, the integer output against a numpy
reference at the extremes of the weight ranges, and the file format with
each defect the loader must refuse. Every SIMD path the CPU has runs.
The reference lives in tests/nnue_reference.py."""

from __future__ import annotations

import collections
import random
from collections.abc import Iterator
from pathlib import Path

import chess
import nnue_reference as ref
import numpy as np
import pytest

from chesszero import _core

START = chess.STARTING_FEN
PATHS = _core.nnue_simd_paths()


@pytest.fixture
def simd() -> Iterator[None]:
    """Tests that force a SIMD path leave the automatic choice behind."""
    yield
    _core.nnue_set_simd("auto")


def random_weights(hidden: int, seed: int, regime: str = "extreme"):
    """(w1, b1, w2, b2): "extreme" mixes the range limits with uniform values,
    "max" / "min" are the limits themselves, "moderate" keeps accumulators
    inside the clamp's 0..255 so the squares in between are exercised."""
    rng = np.random.default_rng(seed)

    def draw(shape: tuple[int, ...], limit: int) -> np.ndarray:
        if regime == "max":
            return np.full(shape, limit, np.int16)
        if regime == "min":
            return np.full(shape, -limit, np.int16)
        if regime == "moderate":
            return rng.integers(-limit // 12, limit // 12 + 1, shape).astype(np.int16)
        uniform = rng.integers(-limit, limit + 1, shape)
        edge = rng.choice([-limit, limit], shape)
        return np.where(rng.random(shape) < 0.5, edge, uniform).astype(np.int16)

    w1 = draw((ref.INPUTS, hidden), ref.MAX_W1)
    b1 = draw((hidden,), ref.MAX_W1)
    w2 = draw((2 * hidden,), ref.MAX_W2)
    b2 = {"max": ref.MAX_B2, "min": -ref.MAX_B2}.get(regime, int(rng.integers(-ref.MAX_B2, ref.MAX_B2 + 1)))
    return w1, b1, w2, b2


# ------------------------------------------------------------------ the games

ParsedBoard = dict[int, str]


def _board(fen: str) -> ParsedBoard:
    placement, out = fen.split(" ", 1)[0], {}
    for rank, row in enumerate(placement.split("/")):
        file = 0
        for ch in row:
            if ch.isdigit():
                file += int(ch)
            else:
                out[(7 - rank) * 8 + file] = ch
                file += 1
    return out


def _kinds(board: ParsedBoard, uci: str) -> list[str]:
    """The kinds of move `uci` is in `board` (normal moves have none)."""
    frm = chess.parse_square(uci[:2])
    to = chess.parse_square(uci[2:4])
    piece = board[frm]
    out = []
    if piece in "Kk" and abs(frm - to) == 2:
        out.append("castling")
    if piece in "Pp" and chess.square_file(frm) != chess.square_file(to) and to not in board:
        out.append("en_passant")
    if to in board:
        out.append("capture")
    if len(uci) == 5:
        out.append("promotion")
        if to in board:
            out.append("promotion_capture")
    return out


class Games:
    """Random games played by the core's move generator (fast; the features are
    checked against python-chess separately): start FEN, UCI moves, the FEN
    after each move, and how often each kind of move occurred."""

    def __init__(self, count: int, max_plies: int, seed: int) -> None:
        rng = random.Random(seed)
        self.moves: list[list[str]] = []
        self.fens: list[list[str]] = []
        self.kinds: collections.Counter[str] = collections.Counter()
        for _ in range(count):
            game, fens, moves = _core._Game(), [START], []
            for _ in range(max_plies):
                legal = game.legal_uci()
                if not legal:
                    break
                uci = rng.choice(legal)
                self.kinds.update(_kinds(_board(fens[-1]), uci))
                game.push_uci(uci)
                moves.append(uci)
                fens.append(game.fen())
            self.moves.append(moves)
            self.fens.append(fens)


@pytest.fixture(scope="module")
def games() -> Games:
    return Games(count=1000, max_plies=160, seed=11)


@pytest.fixture(scope="module")
def boards() -> list[chess.Board]:
    """10,000 positions from long random python-chess games (promotions,
    castling and en passant included), plus a few chosen ones."""
    rng = random.Random(5)
    seen: list[chess.Board] = []
    while len(seen) < 14_000:
        board = chess.Board()
        for _ in range(300):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            seen.append(board.copy(stack=False))
    chosen = [chess.Board(fen) for fen in (
        START,
        "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
        "8/8/8/8/8/8/8/K6k w - - 0 1",
        "1r2k3/P7/8/8/8/8/7p/4K1N1 b - - 0 1",
    )]
    return chosen + rng.sample(seen, 10_000 - len(chosen))


def test_the_games_cover_every_kind_of_move(games: Games) -> None:
    for kind in ("capture", "promotion", "promotion_capture", "castling", "en_passant"):
        assert games.kinds[kind] > 0, (kind, games.kinds)


# -------------------------------------------------------------------- features


def test_features_match_python_chess(boards: list[chess.Board]) -> None:
    fens = [b.fen() for b in boards]
    stm, nstm = _core.nnue_features_batch(fens)
    assert stm.dtype == np.int32 and stm.shape == (len(fens), 32) and nstm.shape == stm.shape
    want = [ref.stm_features(b) for b in boards]
    np.testing.assert_array_equal(stm, ref.padded([w[0] for w in want]))
    np.testing.assert_array_equal(nstm, ref.padded([w[1] for w in want]))
    for fen, (us, them) in list(zip(fens, want, strict=True))[:300]:
        a, b = _core.nnue_features(fen)
        assert a.dtype == np.int32 and a.tolist() == us and b.tolist() == them


def test_feature_layout_by_hand() -> None:
    # White to move: the white king on e1 is "mine" (0) + 64 * 5 + 4 from
    # White's view; from Black's view it is "theirs" (384) + 320 + (4 ^ 56).
    stm, nstm = _core.nnue_features("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
    assert stm.tolist() == [320 + 4, 384 + 320 + 60]
    assert nstm.tolist() == [320 + 4, 384 + 320 + 60]  # the mirror image of the same board
    stm, nstm = _core.nnue_features("4k3/8/8/8/8/8/P7/4K3 b - - 0 1")
    assert stm.tolist() == [320 + 4, 384 + 0 + 48, 384 + 320 + 60]  # Black's view: a2 is a7
    assert nstm.tolist() == [8, 320 + 4, 384 + 320 + 60]


# ----------------------------------------------------------- incremental updates


@pytest.mark.parametrize("path", PATHS)
def test_incremental_accumulators_equal_refresh(games: Games, path: str, simd: None) -> None:
    _core.nnue_set_simd(path)
    assert _core.nnue_simd() == path
    net = _core.NnueNet.from_arrays(*random_weights(48, seed=3))
    for moves, fens in zip(games.moves, games.fens, strict=True):
        trace = net.trace(START, moves)
        assert trace.dtype == np.int16 and trace.shape == (len(moves) + 1, 2, 48)
        refreshed = np.stack([net.accumulators(fen) for fen in fens])
        np.testing.assert_array_equal(trace, refreshed, err_msg=" ".join(moves))


@pytest.fixture(scope="module")
def null_lines() -> list[tuple[list[str], list[str]]]:
    """Random python-chess lines with null moves ('0000', never in check): (moves, FENs)."""
    rng = random.Random(8)
    out = []
    for _ in range(150):
        board, line, fens = chess.Board(), [], [START]
        for _ in range(80):
            moves = list(board.legal_moves)
            if not moves:
                break
            move = chess.Move.null() if rng.random() < 0.15 and not board.is_check() else rng.choice(moves)
            board.push(move)
            line.append(move.uci())
            fens.append(board.fen())
        out.append((line, fens))
    assert sum(line.count("0000") for line, _ in out) > 100
    return out


@pytest.mark.parametrize("path", PATHS)
def test_search_stack_evaluates_like_a_refresh(null_lines, path: str, simd: None) -> None:
    """EvalStack::evaluate, pushed and evaluated ply by ply with null moves, equals a full evaluation."""
    _core.nnue_set_simd(path)
    net = _core.NnueNet.from_arrays(*random_weights(128, seed=4))
    for line, fens in null_lines:
        np.testing.assert_array_equal(net.evaluate_line(START, line), net.evaluate_batch(fens), err_msg=str(line))


# ------------------------------------------------------------------- inference


@pytest.mark.parametrize("hidden", [16, 128, 256])
def test_evaluate_matches_numpy_reference(boards: list[chess.Board], hidden: int, simd: None) -> None:
    sample = boards[:1500]
    fens = [b.fen() for b in sample]
    feats = [ref.stm_features(b) for b in sample]
    stm, nstm = ref.padded([f[0] for f in feats]), ref.padded([f[1] for f in feats])
    for seed, regime in enumerate(["extreme", "max", "min", "moderate"]):
        weights = random_weights(hidden, seed=100 + seed, regime=regime)
        want = ref.evaluate(*weights, stm, nstm)
        net = _core.NnueNet.from_arrays(*weights)
        assert net.hidden == hidden
        for path in PATHS:
            _core.nnue_set_simd(path)
            got = net.evaluate_batch(fens)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, want, err_msg=f"{regime} on {path}")
            assert [net.evaluate(f) for f in fens[:20]] == want[:20].tolist()
    if hidden == 256:  # the "max" network: every c = 255, the sum passes 2^31
        assert 2 * hidden * 255 * 255 * ref.MAX_W2 > 2**31


def test_evaluate_by_hand() -> None:
    # One neuron lit: N = 16, b1 = 0, W1 = 0 except the white king on e1 from
    # White's view (feature 324) at neuron 0 = 200 (Black's king on d8 is 323
    # from Black's view). White to move: acc_us[0] = 200, everything else 0,
    # so the sum is 200^2 * W2[0] = 40000 * 100.
    w1 = np.zeros((768, 16), np.int16)
    w1[324, 0] = 200
    w2 = np.zeros(32, np.int16)
    w2[0] = 100
    net = _core.NnueNet.from_arrays(w1, np.zeros(16, np.int16), w2, -1000)
    out = 4_000_000 // 255 - 1000  # 14686
    assert net.evaluate("3k4/8/8/8/8/8/8/4K3 w - - 0 1") == out * 400 // (255 * 64) == 359
    # Black to move: the lit accumulator is "them" (W2[16] = 0): only b2 remains,
    # -1000 * 400 / 16320 = -24.5, truncated toward zero (not floored to -25).
    assert net.evaluate("3k4/8/8/8/8/8/8/4K3 b - - 0 1") == -24


# ----------------------------------------------------------------- file format


def test_file_round_trip(boards: list[chess.Board], tmp_path: Path) -> None:
    weights = random_weights(128, seed=7)
    path = ref.write_nnue(tmp_path / "net.nnue", *weights)
    assert path.stat().st_size == 197_412  # docs/nnue.md section 5
    loaded = _core.NnueNet.load(str(path))
    assert loaded.hidden == 128
    fens = [b.fen() for b in boards[:500]]
    built = _core.NnueNet.from_arrays(*weights)
    np.testing.assert_array_equal(loaded.evaluate_batch(fens), built.evaluate_batch(fens))
    np.testing.assert_array_equal(_core.NnueNet.load(path).accumulators(START), built.accumulators(START))


def _defects(weights) -> dict[str, tuple[bytes, str]]:
    """Defective files and a word the loader's message must contain."""
    good = ref.nnue_bytes(*weights)
    corrupt = bytearray(good)
    corrupt[1000] ^= 0x40
    bad_sum = bytearray(good)
    bad_sum[-1] ^= 0xFF
    w1 = weights[0].copy()
    w1[5, 3] = ref.MAX_W1 + 1
    return {
        "truncated": (good[:-10], "truncated"),
        "truncated_header": (good[:12], "truncated"),
        "trailing": (good + b"\0", "trailing"),
        "magic": (ref.nnue_bytes(*weights, magic=b"CZNX"), "magic"),
        "version": (ref.nnue_bytes(*weights, version=2), "version"),
        "scales": (ref.nnue_bytes(*weights, scales=(256, 64, 400)), "scales"),
        "checksum": (bytes(bad_sum), "checksum"),
        "corrupt_byte": (bytes(corrupt), "checksum"),
        "hidden_300": (ref.nnue_bytes(*random_weights(300, seed=2)), "hidden size 300"),
        "hidden_24": (ref.nnue_bytes(*random_weights(24, seed=2)), "hidden size 24"),
        "w1_range": (ref.nnue_bytes(w1, *weights[1:]), "W1 value 506"),
        "empty": (b"", "truncated"),
    }


def test_defective_files_are_refused_naming_the_file(tmp_path: Path) -> None:
    for name, (data, word) in _defects(random_weights(16, seed=9)).items():
        path = tmp_path / f"{name}.nnue"
        path.write_bytes(data)
        with pytest.raises(ValueError) as info:
            _core.NnueNet.load(str(path))
        assert str(path) in str(info.value) and word in str(info.value), (name, str(info.value))
    missing = tmp_path / "missing.nnue"
    with pytest.raises(ValueError, match="missing.nnue"):
        _core.NnueNet.load(missing)


def test_from_arrays_checks_shapes_dtypes_and_ranges() -> None:
    w1, b1, w2, b2 = random_weights(16, seed=1)
    bad = {
        "w1 dtype": (w1.astype(np.int32), b1, w2, b2),
        "w1 shape": (w1[:700], b1, w2, b2),
        "w1 ndim": (w1.ravel(), b1, w2, b2),
        "b1 shape": (w1, b1[:8], w2, b2),
        "b1 dtype": (w1, b1.astype(np.float32), w2, b2),
        "w2 shape": (w1, b1, w2[:16], b2),
        "w1 range": (np.full_like(w1, -ref.MAX_W1 - 1), b1, w2, b2),
        "b1 range": (w1, np.full_like(b1, ref.MAX_W1 + 1), w2, b2),
        "w2 range": (w1, b1, np.full_like(w2, ref.MAX_W2 + 1), b2),
        "b2 range": (w1, b1, w2, ref.MAX_B2 + 1),
        "hidden 24": (np.zeros((768, 24), np.int16), np.zeros(24, np.int16), np.zeros(48, np.int16), 0),
        "hidden 0": (np.zeros((768, 0), np.int16), np.zeros(0, np.int16), np.zeros(0, np.int16), 0),
    }
    for name, args in bad.items():
        with pytest.raises(ValueError, match="NnueNet.from_arrays"):
            _core.NnueNet.from_arrays(*args)
            pytest.fail(name)
    # A non-contiguous int16 view is accepted (copied).
    wide = np.zeros((768, 32), np.int16)
    wide[:, ::2] = w1
    assert _core.NnueNet.from_arrays(wide[:, ::2], b1, w2, b2).evaluate(START) == \
        _core.NnueNet.from_arrays(w1, b1, w2, b2).evaluate(START)


# -------------------------------------------------------------------- bad input


def test_malformed_fens_and_illegal_moves_raise_the_core_errors() -> None:
    net = _core.NnueNet.from_arrays(*random_weights(16, seed=1))
    bad = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1"
    for call in (lambda: _core.nnue_features(bad), lambda: _core.nnue_features_batch([START, bad]),
                 lambda: net.evaluate(bad), lambda: net.evaluate_batch([START, bad]),
                 lambda: net.accumulators(bad), lambda: net.trace(bad, []), lambda: net.evaluate_line(bad, [])):
        with pytest.raises(_core.InvalidFenError, match="invalid FEN"):
            call()
    with pytest.raises(_core.InvalidFenError, match=r"fens\[1\]"):
        net.evaluate_batch([START, bad])
    with pytest.raises(_core.IllegalMoveError, match="e2e5"):
        net.trace(START, ["e2e4", "e7e5", "e2e5"])
    with pytest.raises(_core.IllegalMoveError, match="null move"):
        net.evaluate_line("4k3/8/8/8/8/8/4r3/4K3 w - - 0 1", ["0000"])
    assert net.trace(START, []).shape == (1, 2, 16)
    assert _core.nnue_features_batch([])[0].shape == (0, 32)


def test_simd_choice(simd: None) -> None:
    assert PATHS[0] == "scalar" and set(PATHS) <= {"scalar", "avx2", "avx512"}
    _core.nnue_set_simd("auto")
    assert _core.nnue_simd() == PATHS[-1]
    with pytest.raises(ValueError, match="unknown SIMD path 'sse9'"):
        _core.nnue_set_simd("sse9")
