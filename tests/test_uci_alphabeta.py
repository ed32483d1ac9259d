"""The second engine over UCI and in matches: ``chesszero uci --engine alphabeta``
(in process and as a real subprocess driven by python-chess), the go-limit
planning, the match player and the ladder/uci command-line checks."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time
from pathlib import Path

import chess
import chess.engine
import pytest

from chesszero import _core, core
from chesszero.evaluate.alphabeta_player import AlphaBetaPlayer
from chesszero.evaluate.match import play_match
from chesszero.evaluate.openings import DEFAULT_OPENINGS, load_openings
from chesszero.evaluate.players import RandomPlayer
from chesszero.search.alphabeta import AlphaBetaEngine, AlphaBetaLimits, load_net
from chesszero.uci.alphabeta import AlphaBetaUci, plan_limits
from chesszero.uci.protocol import GoLimits

pytestmark = pytest.mark.skipif(not hasattr(_core, "AlphaBeta"), reason="native alpha-beta not built")

MATE_IN_TWO = "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1"  # Nf6+ gxf6 Bxf7#
WAIT_S = 60.0
REPO = Path(__file__).resolve().parents[1]


class Lines(io.StringIO):
    """An output stream that lets a test wait for a line starting with a prefix."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self._changed = threading.Condition()

    def write(self, text: str) -> int:
        with self._changed:
            self.lines += [line for line in text.splitlines() if line]
            self._changed.notify_all()
        return len(text)

    def wait_for(self, prefix: str, count: int = 1) -> list[str]:
        with self._changed:
            ok = self._changed.wait_for(
                lambda: sum(line.startswith(prefix) for line in self.lines) >= count, timeout=WAIT_S)
        assert ok, f"no {prefix!r} in {self.lines}"
        return [line for line in self.lines if line.startswith(prefix)]


def test_plan_limits_from_go() -> None:
    assert plan_limits(GoLimits(depth=5), white_to_move=True, move_overhead_ms=30)[0] == AlphaBetaLimits(depth=5)
    assert plan_limits(GoLimits(nodes=1000), white_to_move=True, move_overhead_ms=30)[0].nodes == 1000
    assert plan_limits(GoLimits(movetime_ms=100), white_to_move=True, move_overhead_ms=30)[0].movetime_ms == 70
    assert plan_limits(GoLimits(infinite=True), white_to_move=True, move_overhead_ms=30)[0].infinite
    assert plan_limits(GoLimits(), white_to_move=True, move_overhead_ms=30)[0].infinite
    clock = plan_limits(GoLimits(wtime_ms=60_000, btime_ms=1000), white_to_move=False, move_overhead_ms=30)[0]
    assert 0 < clock.movetime_ms < 1000  # Black's clock, not White's
    limits, notes = plan_limits(GoLimits(mate=3, depth=2), white_to_move=True, move_overhead_ms=0)
    assert limits.depth == 2 and any("mate" in n for n in notes)
    with pytest.raises(ValueError, match="needs a depth"):
        AlphaBetaLimits()
    with pytest.raises(ValueError, match="nodes"):
        AlphaBetaLimits(nodes=-1)


def test_engine_finds_mate_and_reports_iterations() -> None:
    engine = AlphaBetaEngine("control")
    infos = []
    result = engine.search(core.Game(MATE_IN_TWO), AlphaBetaLimits(depth=5), on_info=infos.append)
    assert result.best == "d5f6" and result.mate == 2
    assert [i.depth for i in infos] == sorted(i.depth for i in infos) and infos[-1].depth == result.depth
    board = chess.Board(MATE_IN_TWO)
    for move in result.pv:
        board.push_uci(move)
    assert board.is_checkmate()


def test_engine_sees_the_game_history_for_repetitions() -> None:
    """The same position with a history that makes a repetition available scores
    differently from the bare FEN only if the history reaches the search."""
    game = core.Game()
    for move in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        game.push_uci(move)
    # Black to move: ...Nf6-g8 repeats the start position a third time (a draw).
    result = AlphaBetaEngine("control").search(game, AlphaBetaLimits(depth=4))
    assert result.best is not None and result.best in game.legal_uci()


def test_uci_session_in_process() -> None:
    out = Lines()
    engine = AlphaBetaUci("control", out)
    engine.handle("uci")
    assert out.wait_for("uciok") and any("option name Hash" in line for line in out.lines)
    engine.handle("setoption name Hash value 8")
    engine.handle("setoption name Threads value 2")  # outside 1..1: an error line, engine stays up
    assert any("error" in line for line in out.lines)
    engine.handle(f"position fen {MATE_IN_TWO}")
    engine.handle("go depth 4")
    best = out.wait_for("bestmove")[-1]
    assert best.startswith("bestmove d5f6")
    assert any(line.startswith("info depth") and "score mate 2" in line for line in out.lines)
    engine.handle("position startpos moves e2e4 e9e5")  # illegal: rejected, previous position kept
    assert any("illegal move" in line for line in out.lines)
    engine.handle("quit")


def test_stop_ends_infinite_within_50ms() -> None:
    out = Lines()
    engine = AlphaBetaUci("control", out)
    engine.handle("position startpos")
    engine.handle("go infinite")
    out.wait_for("info depth", count=3)
    started = time.perf_counter()
    engine.handle("stop")
    elapsed = time.perf_counter() - started
    best = out.wait_for("bestmove")[-1].split()[1]
    assert best in core.Game().legal_uci()
    assert elapsed < 0.05, f"stop took {elapsed * 1000:.1f} ms"


def test_uci_subprocess_with_python_chess(tmp_path) -> None:
    engine = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, "-m", "chesszero", "uci", "--engine", "alphabeta", "--net", "control"], timeout=WAIT_S)
    try:
        assert "alphabeta" in engine.id["name"]
        board = chess.Board()
        for _ in range(6):
            result = engine.play(board, chess.engine.Limit(time=0.05), info=chess.engine.INFO_ALL)
            assert result.move in board.legal_moves
            board.push(result.move)
        info = engine.analyse(chess.Board(MATE_IN_TWO), chess.engine.Limit(depth=4))
        assert info["score"].white().mate() == 2 and info["nodes"] > 0 and info["pv"]
    finally:
        engine.quit()


def test_uci_rejects_bad_net_file(tmp_path) -> None:
    bad = tmp_path / "bad.nnue"
    bad.write_bytes(b"not a network")
    run = subprocess.run(
        [sys.executable, "-m", "chesszero", "uci", "--engine", "alphabeta", "--net", str(bad)],
        input="quit\n", capture_output=True, text=True, timeout=WAIT_S)
    assert run.returncode == 2 and "bad.nnue" in run.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "chesszero", "uci", "--engine", "alphabeta", "--net", str(tmp_path / "none.nnue")],
        input="quit\n", capture_output=True, text=True, timeout=WAIT_S)
    assert missing.returncode == 2 and "none.nnue" in missing.stderr
    with pytest.raises(FileNotFoundError, match="none.nnue"):
        load_net(tmp_path / "none.nnue")


def test_player_beats_random_mover_and_plays_legal_moves() -> None:
    player = AlphaBetaPlayer("control", nodes=2000)
    try:
        openings = load_openings(REPO / DEFAULT_OPENINGS)[:2]
        result = play_match(player, RandomPlayer(seed=3), openings, max_plies=200, concurrency=2)
    finally:
        player.close()
    assert len(result.games) == 4 and result.score >= 0.75, result.summary()
    with pytest.raises(ValueError, match="exactly one"):
        AlphaBetaPlayer("control", nodes=10, movetime_ms=10)


def test_infinite_search_that_proves_a_mate_still_waits_for_stop() -> None:
    out = Lines()
    engine = AlphaBetaUci("control", out)
    engine.handle("position fen 6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8#
    engine.handle("go infinite")
    out.wait_for("info depth", count=5)
    assert engine.searching and not any(line.startswith("bestmove") for line in out.lines)
    engine.handle("stop")
    assert out.wait_for("bestmove")[-1].split()[1] == "a1a8"


def test_limited_search_answers_once_a_mate_is_settled() -> None:
    result = AlphaBetaEngine("control").search(core.Game(MATE_IN_TWO), AlphaBetaLimits(movetime_ms=60_000))
    assert result.mate == 2 and result.depth < 20 and result.time_ms < 10_000
