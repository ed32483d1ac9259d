"""The second engine (docs/nnue.md): alpha-beta speed against Stockfish 15.1 and
the NNUE student's strength at equal wall time (issue 23).

Rows (targets.py, issue 23; this machine, one thread each, measured in this run):

- ``nnue-nps-vs-stockfish``: the student's alpha-beta nodes/s over the same
  ``--positions`` positions (the opening suite's) searched to the same node
  count as Stockfish 15.1 (``Threads 1``, ``Hash 16``, ``ucinewgame`` before each);
  both timed from command to result, nodes as each engine reports them.
  ``control-nps-vs-stockfish``: the same search with the control evaluator.
- ``student-vs-teacher``: the student's score against its teacher (the teacher's
  network with its tree search, ``chesszero uci`` default) at ``--movetime-ms``
  (100) a move, paired games from the opening suite, both engines as UCI
  processes driven the same way (``evaluate.uci_player``); Elo with a 95%
  bootstrap interval over opening pairs in ``extra``.
- ``student-vs-control``: the same against the control evaluator under the same search.
- ``student-ladder`` / ``teacher-ladder``: joint ratings on the project's
  Stockfish ladder at the same time per move (with ``--ladder``).
- ``student-size``: the student file's bytes (at most 256 KB).

Without a student (``--net``, default the newest under runs/nnue/) or a teacher
artifact (``--teacher``, default the student's recorded teacher) the rows that
need them are left out and the run says so. Opt-in (matches take a while):
``chesszero bench --only nnue [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import Row, report
from targets import target

from chesszero import core
from chesszero.evaluate.match import MatchResult, play_match
from chesszero.evaluate.openings import DEFAULT_OPENINGS, load_openings
from chesszero.evaluate.uci_player import UciPlayer
from chesszero.search.alphabeta import AlphaBetaEngine, AlphaBetaLimits

OPT_IN = True
REPO = Path(__file__).resolve().parents[1]
STOCKFISH = "/usr/games/stockfish"


def stockfish_nps(fens: list[str], nodes: int) -> tuple[float, int, float] | None:
    """Stockfish's (nodes/s, nodes, seconds) over ``fens`` at ``go nodes``; None without it."""
    path = shutil.which(STOCKFISH) or shutil.which("stockfish")
    if path is None:
        return None
    proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout

    def send(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def until(prefix: str) -> list[str]:
        lines = []
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("Stockfish exited")
            lines.append(line.strip())
            if line.startswith(prefix):
                return lines

    send("uci")
    until("uciok")
    send("setoption name Threads value 1")
    send("setoption name Hash value 16")
    total_nodes, total_seconds = 0, 0.0
    for fen in fens:
        send("ucinewgame")
        send("isready")
        until("readyok")
        send(f"position fen {fen}")
        started = time.perf_counter()
        send(f"go nodes {nodes}")
        lines = until("bestmove")
        total_seconds += time.perf_counter() - started
        infos = [line.split() for line in lines if line.startswith("info") and " nodes " in line]
        total_nodes += int(infos[-1][infos[-1].index("nodes") + 1])
    send("quit")
    proc.wait(timeout=10)
    return total_nodes / total_seconds, total_nodes, total_seconds


def own_nps(net: str, fens: list[str], nodes: int) -> tuple[float, int, float]:
    """The alpha-beta's (nodes/s, nodes, seconds) over ``fens`` at ``nodes``, table cleared each time."""
    engine = AlphaBetaEngine(net, hash_mb=16)
    total_nodes, total_seconds = 0, 0.0
    for fen in fens:
        engine.clear()
        started = time.perf_counter()
        result = engine.search(core.Game(fen), AlphaBetaLimits(nodes=nodes))
        total_seconds += time.perf_counter() - started
        total_nodes += result.nodes
    return total_nodes / total_seconds, total_nodes, total_seconds


def match_row(name: str, result: MatchResult, reference: str, target_name: str) -> Row:
    elo = result.elo(0.0)
    return Row(name, result.score, "score", reference, target=target(target_name), extra={
        "games": len(result.games), "wins": result.wins, "draws": result.draws, "losses": result.losses,
        "elo": round(elo.estimate), "elo_lower": round(elo.lower), "elo_upper": round(elo.upper),
        "elo_is_bound": elo.is_bound})


MOVE_OVERHEAD_MS = 10
"""Both engines reserve the same time per move for the protocol (the network engine's
default, 100 ms, would leave it 10 ms of a 100 ms move)."""


def uci_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "chesszero", "uci", *args]


def uci_player(name: str, ms: int, *args: str) -> UciPlayer:
    return UciPlayer(uci_command(*args), movetime_ms=ms, name=name, options={"MoveOverhead": MOVE_OVERHEAD_MS})


def teacher_artifact(student: Path) -> Path | None:
    """The teacher's ONNX artifact recorded in the student's build summary (if any)."""
    summary = student.parent / "summary.json"
    if not summary.is_file():
        return None
    recorded = json.loads(summary.read_text()).get("teacher", {}).get("artifact")
    return Path(recorded) if recorded else None


def opponents_for_ladder(teacher: Path | None, ms: int) -> list[UciPlayer]:
    if teacher is None or not teacher.is_file():
        return []
    return [uci_player("teacher", ms, "--model", str(teacher), "--visits", "0")]


def ladder_rows(student: UciPlayer, others: list[UciPlayer], games: list) -> list[Row]:
    """Joint ladder ratings of the student and (when there is one) its teacher, same time a move."""
    from chesszero.evaluate.ladder import DEFAULT_TABLE, LadderTable, rate_on_ladder

    table = LadderTable.load(REPO / DEFAULT_TABLE)
    rows = []
    for player in [student, *others]:
        try:
            rating, _ = rate_on_ladder(player, table, games, budget=f"{player.movetime_ms} ms", max_matches=4,
                                       concurrency=1)
        finally:
            if player is not student:
                player.close()
        joint = rating.joint
        value = joint.estimate if joint is not None else rating.elo.estimate
        rows.append(Row(f"{player.name}-ladder", value, "Elo", "joint rating on the Stockfish ladder",
                        extra={"describe": rating.describe(), "scores": rating.scores}))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 positions at 20,000 nodes, 4-game matches")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--net", type=Path, default=None, help="student .nnue (default: the newest)")
    parser.add_argument("--teacher", type=Path, default=None, help="teacher ONNX artifact")
    parser.add_argument("--positions", type=int, default=30)
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--games", type=int, default=100, help="games per match (even)")
    parser.add_argument("--movetime-ms", type=int, default=100)
    parser.add_argument("--ladder", action="store_true", help="also rate student and teacher on the ladder")
    parser.add_argument("--ladder-games", type=int, default=20, help="games per ladder match (even)")
    args = parser.parse_args()
    if args.quick:
        args.positions, args.nodes, args.games, args.ladder_games = 5, 20_000, 4, 2
    from chesszero.nnue.paths import latest_student

    student = args.net or latest_student(REPO)
    openings = load_openings(REPO / DEFAULT_OPENINGS)
    fens = [o.final_board().fen() for o in openings][: args.positions]
    rows: list[Row] = []
    notes: list[str] = []

    sf = stockfish_nps(fens, args.nodes)
    sf_ref = "Stockfish 15.1 (1 thread), same positions and node count"
    for label, net, target_name in (("nnue", student, "nnue-nps-vs-stockfish"), ("control", "control", None)):
        if net is None:
            notes.append("no NNUE student (chesszero nnue build): student rows left out")
            continue
        nps, nodes, seconds = own_nps(str(net), fens, args.nodes)
        rows.append(Row(f"{label}-nps-vs-stockfish", nps, "nodes/s", sf_ref if sf else "",
                        ratio=nps / sf[0] if sf else None,
                        target=target(target_name) if target_name else None,
                        extra={"positions": len(fens), "nodes_per_search": args.nodes, "nodes": nodes,
                               "seconds": round(seconds, 3),
                               **({"stockfish_nps": round(sf[0]), "stockfish_nodes": sf[1]} if sf else {})}))

    if student is not None:
        rows.append(Row("student-size", float(Path(student).stat().st_size), "bytes", str(student),
                        target=target("nnue-size")))
        games = openings[: args.games // 2]
        ms = args.movetime_ms
        me = uci_player("student", ms, "--engine", "alphabeta", "--net", str(student))
        opponents = [("student-vs-control", "nnue-vs-control",
                      uci_player("control", ms, "--engine", "alphabeta", "--net", "control"))]
        teacher = args.teacher or teacher_artifact(Path(student))
        if teacher is not None and teacher.is_file():
            opponents.insert(0, ("student-vs-teacher", "nnue-vs-teacher",
                                 uci_player("teacher", ms, "--model", str(teacher), "--visits", "0")))
        else:
            notes.append(f"no teacher artifact ({teacher}): student-vs-teacher left out")
        try:
            for row_name, target_name, opponent in opponents:
                try:
                    result = play_match(me, opponent, games, concurrency=1, parallel_players=False)
                finally:
                    opponent.close()
                rows.append(match_row(row_name, result, f"{opponent.name} at {ms} ms a move, same run", target_name))
            if args.ladder:
                rows += ladder_rows(me, opponents_for_ladder(teacher, ms), openings[: args.ladder_games // 2])
        finally:
            me.close()
    report(f"Second engine: alpha-beta + NNUE student ({args.movetime_ms} ms a move)", rows, args.json,
           meta={"notes": notes})
    for note in notes:
        print("note:", note)


if __name__ == "__main__":
    main()
