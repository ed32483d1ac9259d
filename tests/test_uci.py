"""UCI engine: protocol parsing/formatting, time management, the engine loop in
process (uniform and scripted evaluators), and one real subprocess driven by
python-chess with a tiny exported network."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from chesszero import core
from chesszero.search.evaluators import NUM_ACTIONS, ScriptedEvaluator, UniformEvaluator
from chesszero.uci.engine import EngineSettings, UciEngine, run_uci
from chesszero.uci.model import source_from_evaluator
from chesszero.uci.protocol import (
    Go,
    GoLimits,
    Info,
    OptionKind,
    OptionSpec,
    Position,
    Score,
    SetOption,
    Uci,
    UciError,
    format_bestmove,
    format_info,
    parse_command,
    value_to_cp,
    value_to_wdl,
)
from chesszero.uci.timeman import MAX_VISITS, TimeSettings, clock_budget_ms, plan_search

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8#
MATED = "R5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 1 1"
WAIT_S = 60.0  # safety net only: every wait below ends on an event


# ----------------------------------------------------------------------------- protocol


def test_parse_position_and_moves() -> None:
    assert parse_command("position startpos") == Position(fen=None)
    assert parse_command("  position startpos moves e2e4 e7e5\n") == Position(None, ("e2e4", "e7e5"))
    fen = "8/8/8/8/8/8/8/K1k5 w - - 0 1"
    assert parse_command(f"position fen {fen} moves a1a2") == Position(fen, ("a1a2",))
    assert parse_command("") is None and parse_command("   \n") is None


def test_parse_go_limits() -> None:
    go = parse_command("go wtime 1000 btime -5 winc 10 binc 20 movestogo 7 nodes 3 movetime 50")
    assert go == Go(
        GoLimits(nodes=3, movetime_ms=50, wtime_ms=1000, btime_ms=-5, winc_ms=10, binc_ms=20, movestogo=7)
    )
    assert parse_command("go infinite") == Go(GoLimits(infinite=True))
    assert parse_command("go searchmoves e2e4 d2d4 nodes 5") == Go(
        GoLimits(nodes=5, searchmoves=("e2e4", "d2d4"))
    )
    assert parse_command("go") == Go(GoLimits())


def test_parse_setoption_names_with_spaces() -> None:
    assert parse_command("setoption name Move Overhead value 30") == SetOption("Move Overhead", "30")
    assert parse_command("setoption name Clear Hash") == SetOption("Clear Hash", None)


@pytest.mark.parametrize(
    ("line", "word"),
    [
        ("go nodes abc", "integer"),
        ("go nodes -1", "negative"),
        ("go nodes", "needs a number"),
        ("go sideways 3", "sideways"),
        ("position", "position"),
        ("position fen", "position"),
        ("position somewhere", "somewhere"),
        ("setoption value 3", "setoption"),
        ("setoption name value 3", "option name"),
        ("debug maybe", "debug"),
        ("uci now", "no arguments"),
        ("xyzzy 1 2", "xyzzy"),
    ],
)
def test_malformed_lines_raise_errors_quoting_them(line: str, word: str) -> None:
    with pytest.raises(UciError, match=word):
        parse_command(line)


def test_value_to_cp_is_odd_monotone_and_documented() -> None:
    values = np.linspace(-1, 1, 41)
    cps = [value_to_cp(v) for v in values]
    assert cps == sorted(cps) and value_to_cp(0.0) == 0
    assert all(value_to_cp(v) == -value_to_cp(-v) for v in values)
    assert value_to_cp(0.5) == 89 and value_to_cp(0.9) == 546 and value_to_cp(1.0) == 12780
    assert value_to_cp(3.0) == value_to_cp(1.0)  # clamped


def test_value_to_wdl_follows_spec_and_sums_to_1000() -> None:
    assert value_to_wdl(1.0) == (1000, 0, 0) and value_to_wdl(-1.0) == (0, 0, 1000)
    assert value_to_wdl(0.0) == (333, 334, 333)
    for v in np.linspace(-1, 1, 17):
        win, draw, loss = value_to_wdl(v)
        assert win + draw + loss == 1000 and win - loss == pytest.approx(1000 * v, abs=1)


def test_format_info_and_bestmove() -> None:
    info = Info(depth=3, seldepth=3, nodes=10, nps=100, time_ms=100, score=Score(cp=-12),
                wdl=(100, 200, 700), pv=("e2e4", "e7e5"))
    assert format_info(info) == (
        "info depth 3 seldepth 3 time 100 nodes 10 score cp -12 wdl 100 200 700 nps 100 pv e2e4 e7e5"
    )
    assert format_info(Info(score=Score(mate=-2))) == "info score mate -2"
    assert format_bestmove(None) == "bestmove (none)" and format_bestmove("a7a8q") == "bestmove a7a8q"
    with pytest.raises(ValueError, match="either cp or mate"):
        Score(cp=1, mate=1)


def test_option_specs_format_and_check_values() -> None:
    spin = OptionSpec("Visits", OptionKind.SPIN, 800, 0, 100)
    assert spin.format() == "option name Visits type spin default 800 min 0 max 100"
    assert spin.parse(" 42 ") == 42
    for raw, word in ((None, "needs a value"), ("x", "integer"), ("101", r"0\.\.100")):
        with pytest.raises(UciError, match=word):
            spin.parse(raw)
    check = OptionSpec("UCI_ShowWDL", OptionKind.CHECK, False)
    assert check.format().endswith("type check default false") and check.parse("TRUE") is True
    with pytest.raises(UciError, match="true or false"):
        check.parse("yes")


# ----------------------------------------------------------------------------- time management


def test_movetime_and_nodes_budgets() -> None:
    settings = TimeSettings(move_overhead_ms=100)
    plan = plan_search(GoLimits(movetime_ms=1000), white_to_move=True, visits_option=0,
                       legal_moves=20, settings=settings)
    assert plan.seconds == pytest.approx(0.9) and plan.visits == MAX_VISITS and not plan.until_stop
    plan = plan_search(GoLimits(nodes=77, movetime_ms=500), white_to_move=True, visits_option=800,
                       legal_moves=20, settings=settings)
    assert plan.visits == 77 and plan.seconds == pytest.approx(0.4)
    bare = plan_search(GoLimits(), white_to_move=True, visits_option=800, legal_moves=20)
    assert bare.visits == 800 and bare.seconds is None and not bare.until_stop
    unlimited = plan_search(GoLimits(), white_to_move=True, visits_option=0, legal_moves=20)
    assert unlimited.until_stop


def test_clock_budget_shares_time_and_increment() -> None:
    s = TimeSettings(move_overhead_ms=50, default_moves_to_go=30, increment_share=0.75, max_share=0.4)
    assert clock_budget_ms(60_000, 0, None, s) == 2000 - 50
    assert clock_budget_ms(60_000, 1000, 10, s) == 6000 + 750 - 50
    assert clock_budget_ms(1000, 5000, None, s) == 400 - 50  # never above max_share of what is left
    assert clock_budget_ms(-20, 0, None, s) == s.min_ms
    plan = plan_search(GoLimits(wtime_ms=60_000, btime_ms=1000), white_to_move=False,
                       visits_option=0, legal_moves=20, settings=s)
    assert plan.seconds == pytest.approx(s.min_ms / 1000)  # Black's 1 s clock, not White's minute


def test_only_move_and_unsupported_limits() -> None:
    plan = plan_search(GoLimits(movetime_ms=5000, depth=9, mate=3, searchmoves=("e2e4",)),
                       white_to_move=True, visits_option=800, legal_moves=1)
    assert plan.visits == 1
    assert len(plan.notes) == 3 and all("not supported" in n for n in plan.notes)
    assert plan_search(GoLimits(nodes=50), white_to_move=True, visits_option=0, legal_moves=1).visits == 50
    infinite = plan_search(GoLimits(infinite=True, nodes=5), white_to_move=True, visits_option=9, legal_moves=9)
    assert infinite.until_stop and infinite.visits == MAX_VISITS


# ----------------------------------------------------------------------------- engine in process


class Sink(io.TextIOBase):
    """Collects engine output lines; ``expect`` waits for a line with a prefix."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._cursor = 0
        self._partial = ""
        self._cond = threading.Condition()

    def write(self, text: str) -> int:
        with self._cond:
            self._partial += text
            *done, self._partial = self._partial.split("\n")
            self.lines.extend(done)
            self._cond.notify_all()
        return len(text)

    def expect(self, prefix: str) -> str:
        """The next line starting with ``prefix`` (lines before it are passed over)."""
        with self._cond:
            while True:
                for i in range(self._cursor, len(self.lines)):
                    if self.lines[i].startswith(prefix):
                        self._cursor = i + 1
                        return self.lines[i]
                self._cursor = len(self.lines)
                if not self._cond.wait(timeout=WAIT_S):
                    raise AssertionError(f"no line starting with {prefix!r}; got {self.lines}")

    def since(self, mark: int) -> list[str]:
        with self._cond:
            return list(self.lines[mark:])


def make_engine(evaluator: object | None = None, **settings: object) -> tuple[UciEngine, Sink]:
    sink = Sink()
    source = source_from_evaluator(evaluator or UniformEvaluator())  # type: ignore[arg-type]
    engine = UciEngine(source, sink, settings=EngineSettings(**settings))  # type: ignore[arg-type]
    return engine, sink


def search(engine: UciEngine, sink: Sink, *commands: str) -> tuple[list[str], str]:
    """Sends ``commands`` (the last one a go), returns the info lines and the move."""
    mark = len(sink.lines)
    for command in commands:
        assert engine.handle(command)
    line = sink.expect("bestmove")
    infos = [x for x in sink.since(mark) if x.startswith("info") and " nodes " in x]
    return infos, line.split()[1]


def field(line: str, name: str) -> str:
    tokens = line.split()
    return tokens[tokens.index(name) + 1]


def test_handshake_lists_options_and_answers_isready() -> None:
    engine, sink = make_engine(visits=123)
    assert parse_command("uci") == Uci()
    engine.handle("uci")
    assert sink.expect("id name").startswith("id name chesszero")
    assert sink.expect("option name Visits") == "option name Visits type spin default 123 min 0 max 100000000"
    sink.expect("option name Threads")
    sink.expect("option name ParallelLeaves")
    sink.expect("uciok")
    engine.handle("isready")
    sink.expect("readyok")


def test_go_nodes_is_honoured_and_the_move_is_legal() -> None:
    engine, sink = make_engine(parallel_leaves=4)
    infos, move = search(engine, sink, "position startpos moves e2e4 c7c5", "go nodes 96")
    game = core.Game()
    for m in ("e2e4", "c7c5"):
        game.push_uci(m)
    assert move in game.legal_uci()
    assert int(field(infos[-1], "nodes")) == 96
    assert "score cp" in infos[-1] and field(infos[-1], "pv") in game.legal_uci()
    # the next move reuses the tree: nodes still end at the target
    infos, _ = search(engine, sink, f"position startpos moves e2e4 c7c5 {move}", "go nodes 50")
    assert int(field(infos[-1], "nodes")) == 50


def test_mate_is_reported_and_played() -> None:
    engine, sink = make_engine()
    infos, move = search(engine, sink, f"position fen {MATE_IN_ONE}", "go nodes 400")
    assert move == "a1a8" and "score mate 1" in infos[-1]
    mark = len(sink.lines)
    engine.handle(f"position fen {MATED}")
    engine.handle("go nodes 10")
    assert sink.expect("bestmove") == "bestmove (none)"
    assert "info depth 0 score mate 0" in sink.since(mark)


@pytest.mark.parametrize(
    ("fen", "mate"),
    [
        ("kbK5/pp6/1P6/8/8/8/8/R7 w - - 0 1", 2),  # Ra6: mate in two (python-chess checked in test_search_solver)
        ("r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1", 3),  # Ra6: mate in three
        ("kbK5/pp6/RP6/8/8/8/8/8 b - - 1 1", -1),  # after Ra6: mated in one whatever Black plays
    ],
)
def test_proven_mates_are_reported_as_score_mate(fen: str, mate: int) -> None:
    engine, sink = make_engine()
    infos, move = search(engine, sink, f"position fen {fen}", "go nodes 5000")
    assert f"score mate {mate}" in infos[-1]
    assert int(field(infos[-1], "nodes")) < 5000  # a proven root ends the search
    assert move in core.Game(fen).legal_uci()


def test_an_infinite_search_waits_for_stop_after_a_proof() -> None:
    engine, sink = make_engine()
    engine.handle(f"position fen {MATE_IN_ONE}")
    engine.handle("go infinite")
    engine.handle("isready")
    sink.expect("readyok")
    assert engine.searching and not any(x.startswith("bestmove") for x in sink.lines)
    engine.handle("stop")
    assert sink.lines[-1] == "bestmove a1a8"
    assert any("score mate 1" in x for x in sink.lines if x.startswith("info depth"))


def test_stop_ends_an_infinite_search_promptly() -> None:
    started = threading.Event()

    def answer(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        started.set()
        n = planes.shape[0]
        return np.zeros((n, NUM_ACTIONS), np.float32), np.tile(np.float32([0.2, 0.5, 0.3]), (n, 1))

    engine, sink = make_engine(ScriptedEvaluator(answer, record=False), show_wdl=True)
    engine.handle("position startpos")
    engine.handle("go infinite")
    assert started.wait(WAIT_S)
    assert engine.searching
    engine.handle("isready")  # answered during the search
    sink.expect("readyok")
    engine.handle("stop")  # returns once bestmove is out
    assert not engine.searching
    last_info = [x for x in sink.lines if x.startswith("info depth")][-1]
    assert " wdl " in last_info and int(field(last_info, "nodes")) >= 1
    assert int(field(last_info, "seldepth")) >= int(field(last_info, "depth")) >= 1
    assert sink.lines[-1].split()[1] in core.Game().legal_uci()


def test_quit_during_a_search_returns_false_after_bestmove() -> None:
    engine, sink = make_engine(visits=0)
    engine.handle("position startpos")
    engine.handle("go")  # Visits 0 and no limit: until stop
    assert engine.searching
    assert engine.handle("quit") is False
    assert not engine.searching and sink.lines[-1].startswith("bestmove ")


def test_ponderhit_plays_the_pondered_search() -> None:
    engine, sink = make_engine()
    engine.handle("position startpos moves e2e4")
    engine.handle("go ponder wtime 1000 btime 1000")
    assert engine.searching
    engine.handle("ponderhit")
    assert not engine.searching and sink.lines[-1].startswith("bestmove ")


def test_time_limits_end_the_search_by_themselves() -> None:
    engine, sink = make_engine(visits=0, move_overhead_ms=0)
    _, move = search(engine, sink, "position startpos", "go movetime 150")
    assert move in core.Game().legal_uci()
    _, move = search(engine, sink, "position startpos moves g1f3", "go wtime 900 btime 900 winc 0 binc 0")
    game = core.Game()
    game.push_uci("g1f3")
    assert move in game.legal_uci()


def test_bad_commands_are_answered_and_change_nothing() -> None:
    engine, sink = make_engine()
    engine.handle("position startpos moves e2e4")
    for line, word in (
        ("position startpos moves e2e4 e7e6 e1e8", "illegal move 'e1e8'"),
        ("position fen not/a/fen w - - 0 1", "invalid FEN"),
        ("go nodes many", "integer"),
        ("setoption name Visits value -4", "0..100000000"),
        ("setoption name Hash value 64", "unknown option 'Hash'"),
        ("frobnicate", "unknown command"),
    ):
        mark = len(sink.lines)
        assert engine.handle(line)
        assert any(x.startswith("info string error") and word in x for x in sink.since(mark)), line
    _, move = search(engine, sink, "go nodes 8")
    after_e4 = core.Game()
    after_e4.push_uci("e2e4")
    assert move in after_e4.legal_uci()  # the last good position stood
    engine.handle("go depth 4 nodes 8")
    assert "not supported" in sink.expect("info string")
    sink.expect("bestmove")


def test_state_changes_during_an_endless_search_stop_it_first() -> None:
    """As Stockfish does: a search only `stop` would end is stopped, its bestmove
    written, then the command acts; nothing is refused."""
    for line in ("position startpos moves e2e4", "ucinewgame", "go nodes 5", "setoption name Visits value 5"):
        engine, sink = make_engine(visits=0)
        engine.handle("go infinite")
        mark = len(sink.lines)
        assert engine.handle(line)
        out = sink.since(mark)
        assert not any("error" in x for x in out), (line, out)
        bestmoves = [x for x in out if x.startswith("bestmove")]
        assert bestmoves and bestmoves[0].split()[1] in core.Game().legal_uci(), (line, out)
        if line.startswith("go"):
            sink.expect("bestmove")
            sink.expect("bestmove")  # the infinite search's, then this go's
        assert not engine.searching or line.startswith("go")
    engine, sink = make_engine(visits=0)
    engine.handle("go infinite")
    engine.handle("position startpos moves e2e4")
    sink.expect("bestmove")  # the stopped search's
    _, move = search(engine, sink, "go nodes 8")
    after_e4 = core.Game()
    after_e4.push_uci("e2e4")
    assert move in after_e4.legal_uci()


def test_state_changes_during_a_limited_search_wait_for_its_end() -> None:
    engine, sink = make_engine()
    engine.handle("go nodes 300")
    engine.handle("position startpos moves e2e4")  # at once, no wait: acts after the search
    first = [x for x in sink.lines if x.startswith("bestmove")]
    assert len(first) == 1 and first[0].split()[1] in core.Game().legal_uci()
    full = [x for x in sink.lines if x.startswith("info") and " nodes " in x][-1]
    assert int(field(full, "nodes")) == 300  # ran to its limit, not stopped
    sink.expect("bestmove")
    _, move = search(engine, sink, "go nodes 8")
    after_e4 = core.Game()
    after_e4.push_uci("e2e4")
    assert move in after_e4.legal_uci()


def test_options_apply() -> None:
    engine, sink = make_engine()
    engine.handle("setoption name threads value 2")
    assert "no effect" in sink.expect("info string")
    engine.handle("setoption name Visits value 40")
    engine.handle("setoption name ParallelLeaves value 1")
    engine.handle("setoption name UCI_ShowWDL value true")
    infos, _ = search(engine, sink, "ucinewgame", "position startpos", "go")
    assert int(field(infos[-1], "nodes")) == 40 and " wdl " in infos[-1]


def test_a_failing_evaluator_is_reported_and_the_engine_recovers() -> None:
    calls = {"n": 0}

    def flaky(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("device lost")
        return UniformEvaluator().evaluate(planes)

    engine, sink = make_engine(ScriptedEvaluator(flaky, record=False))
    engine.handle("go nodes 10")
    assert sink.expect("info string") == "info string error search failed: RuntimeError: device lost"
    assert sink.expect("bestmove") == "bestmove (none)"
    infos, move = search(engine, sink, "go nodes 10")
    assert move in core.Game().legal_uci() and int(field(infos[-1], "nodes")) == 10


def test_run_uci_reads_until_end_of_input() -> None:
    out = Sink()
    stdin = io.StringIO("uci\nisready\nposition startpos\ngo nodes 20\nisready\n")
    assert run_uci(None, 20, 1, stdin, out) == 0  # end of input acts as quit
    assert "uciok" in out.lines and "readyok" in out.lines
    assert any("uniform evaluator" in x for x in out.lines)
    # The 20-node search may end before or after the second isready is read,
    # so bestmove and that readyok come in either order; quit (end of input)
    # still waits for exactly one bestmove.
    bestmoves = [x for x in out.lines if x.startswith("bestmove ")]
    assert len(bestmoves) == 1 and out.lines.count("readyok") == 2
    assert out.lines.index(bestmoves[0]) > out.lines.index("readyok")


def test_run_uci_refuses_a_missing_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.onnx"
    assert run_uci(str(missing), 10, 1, io.StringIO("uci\n"), Sink()) == 2
    assert "nope.onnx" in capsys.readouterr().err
    assert run_uci(None, -3, 1, io.StringIO(""), Sink()) == 2


# ----------------------------------------------------------------------------- real subprocess


@pytest.fixture(scope="module")
def tiny_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    from chesszero.model.network import ChessNet
    from chesszero.publish import Provenance, export_onnx, fold_network

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("uci") / "tiny-2x16.onnx"
    export_onnx(fold_network(ChessNet("2x16", aux_heads=False)), path, Provenance("0" * 64, "0" * 64, 0))
    return path


def test_python_chess_drives_the_engine_process(tiny_artifact: Path) -> None:
    command = [sys.executable, "-m", "chesszero", "uci", "--model", str(tiny_artifact), "--visits", "16"]
    engine = chess.engine.SimpleEngine.popen_uci(command, timeout=WAIT_S)
    try:
        assert "tiny-2x16.onnx" in engine.id["name"]
        board = chess.Board()
        for _ in range(6):  # python-chess refuses illegal best moves
            result = engine.play(board, chess.engine.Limit(nodes=16))
            assert result.move is not None and result.move in board.legal_moves
            board.push(result.move)
        with engine.analysis(board) as analysis:  # go infinite; leaving the block sends stop
            for info in analysis:
                if info.get("nodes", 0) > 0:
                    assert "score" in info and info.get("pv")
                    break
        assert analysis.wait().move in board.legal_moves
        # the analysed tree is reused: visits already beyond 32 end the search at once
        assert engine.analyse(board, chess.engine.Limit(nodes=32))["nodes"] > 32
        fresh = engine.analyse(board, chess.engine.Limit(nodes=32), game="new")  # ucinewgame
        assert fresh["nodes"] == 32
    finally:
        engine.quit()


def test_engine_process_survives_garbage_and_quits(tiny_artifact: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "chesszero", "uci", "--model", str(tiny_artifact)],
        input="uci\n\x00garbage\nposition startpos moves e9e4\nisready\ngo nodes 4\nquit\n",
        capture_output=True, text=True, timeout=WAIT_S, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "readyok" in lines and lines[-1].startswith("bestmove ")
    assert sum(x.startswith("info string error") for x in lines) == 2


def test_a_file_that_is_not_a_chesszero_network_fails_at_startup(tiny_artifact: Path, tmp_path: Path) -> None:
    """`chesszero uci --model BAD` exits 2 before any protocol traffic, naming the file."""
    import onnx
    from onnx import TensorProto, helper

    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07 this is not a protobuf \xff\xfe" * 8)
    wrong = tmp_path / "wrong-shape.onnx"  # a valid ONNX graph with the wrong signature
    x = helper.make_tensor_value_info("planes", TensorProto.FLOAT, ["N", 12, 8, 8])
    y = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 12, 8, 8])
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Identity", ["planes"], ["out"])],
                                                  "g", [x], [y])), wrong)
    for bad, says in ((junk, "not an ONNX model"), (wrong, "expected one input [N, 52, 8, 8]")):
        proc = subprocess.run([sys.executable, "-m", "chesszero", "uci", "--model", str(bad)],
                              input="uci\nquit\n", capture_output=True, text=True, timeout=WAIT_S, check=False)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith(f"chesszero uci: error: {bad}: ") and says in proc.stderr, proc.stderr
    from chesszero.uci.model import check_onnx_signature

    check_onnx_signature(tiny_artifact)  # a published artifact passes the startup check


def test_piped_input_with_no_waits_is_never_dropped(tiny_artifact: Path) -> None:
    """A GUI (or a script) writing commands back to back: every go gets its
    bestmove, for the position set before it, and nothing is refused."""
    script = ("uci\nisready\nposition startpos\ngo nodes 40\nposition startpos moves e2e4\ngo nodes 20\n"
              "ucinewgame\nposition startpos moves d2d4 d7d5\ngo infinite\nposition startpos moves g1f3\n"
              "go nodes 10\nquit\n")
    proc = subprocess.run([sys.executable, "-m", "chesszero", "uci", "--model", str(tiny_artifact)],
                          input=script, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not any(x.startswith("info string error") for x in lines), lines
    moves = [x.split()[1] for x in lines if x.startswith("bestmove")]
    positions = [(), ("e2e4",), ("d2d4", "d7d5"), ("g1f3",)]
    assert len(moves) == len(positions)
    for move, history in zip(moves, positions, strict=True):
        game = core.Game()
        for m in history:
            game.push_uci(m)
        assert move in game.legal_uci(), (history, move)
