"""NNUE student ablations (issue 23): width N and the result weight lambda, each
student measured by what it is for, games of the alpha-beta search.

Every configuration is built from the same teacher campaign with
``chesszero nnue build`` under one work name (so positions, labels and
features are computed once and only training and export rerun; the
alpha-beta games that add positions use the control evaluator, so every
configuration sees the same data), then plays ``--games`` paired games from
the opening suite against the same search with the control evaluator at
``--nodes`` nodes a move (fixed nodes: the comparison does not move with
machine load). The suite holds 50 openings, so a fixed-node match has at
most 100 distinct games; several node counts (``--nodes 5000 10000``) give
more games, pooled over the opening pairs of every count. The table gives the
held-out loss, the error against the teacher, the file size and the pooled
score with its Elo interval.

Run: ``.venv/bin/python benchmarks/nnue_ablations.py --teacher-campaign NAME
[--configs 128:0.2 64:0.2 256:0.2 128:0 128:0.4] [--games 100] [--nodes 5000 ...]``;
writes ``reports/nnue/ablations/ablations.{md,json}`` and each student file.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from chesszero.evaluate.alphabeta_player import AlphaBetaPlayer
from chesszero.evaluate.elo import rate
from chesszero.evaluate.match import MatchResult, play_match
from chesszero.evaluate.openings import DEFAULT_OPENINGS, load_openings

REPO = Path(__file__).resolve().parents[1]
WORK_NAME = "ablation"


def build(teacher: str, hidden: int, lam: float, extra: list[str], work: str = WORK_NAME) -> dict:
    cmd = [sys.executable, "-m", "chesszero", "nnue", "build", "--teacher-campaign", teacher, "--name", work,
           "--hidden", str(hidden), "--lambda", str(lam), "--set", "nnue.search_net=control", "--no-mlflow",
           "--quiet", *extra]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stdout}\n{run.stderr}")
    return json.loads((REPO / "runs" / "nnue" / work / "summary.json").read_text())


def against_control(student: Path, label: str, nodes: int, openings: list) -> MatchResult:
    """``student`` against the control evaluator, the same search at ``nodes`` nodes a move."""
    me = AlphaBetaPlayer(str(student), nodes=nodes, name=label)
    control = AlphaBetaPlayer("control", nodes=nodes, name="control")
    try:
        return play_match(me, control, openings, concurrency=2, max_plies=300)
    finally:
        me.close()
        control.close()


def measure(label: str, student: Path, summary: dict, args: argparse.Namespace, openings: list, console: Console,
            *, hidden: int, lam: float, override: str) -> dict:
    """The table row of one student: its build's numbers and its pooled score against the control evaluator."""
    results = [against_control(student, label, nodes, openings) for nodes in args.nodes]
    pooled = tuple(sum(r.pentanomial()[i] for r in results) for i in range(5))
    elo = rate(pooled, 0.0, seed=0)
    games = [g for r in results for g in r.games]
    wins, draws = sum(g.score == 1.0 for g in games), sum(g.score == 0.5 for g in games)
    score = sum(g.score for g in games) / len(games)
    export = summary.get("export", {})
    row = {"config": label, "hidden": hidden, "lambda": lam, "override": override, "bytes": student.stat().st_size,
           "holdout_loss": export.get("holdout_loss_quantised"),
           "mae_cp_vs_teacher": export.get("mae_cp_vs_teacher_quantised"),
           "mae_cp_vs_search": export.get("mae_cp_vs_search_quantised"),
           "games": len(games), "wins": wins, "draws": draws, "losses": len(games) - wins - draws,
           "score": score, "elo": elo.estimate, "elo_lower": elo.lower, "elo_upper": elo.upper,
           "elo_is_bound": elo.is_bound, "nodes": args.nodes, "score_per_nodes": [r.score for r in results]}
    console.print(f"{label}: score {score:.3f} vs control ({row['wins']}/{row['draws']}/{row['losses']}; "
                  f"per node count {[round(r.score, 3) for r in results]}), Elo {elo.describe()}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher-campaign", required=True)
    parser.add_argument("--configs", nargs="*", default=["128:0.2", "64:0.2", "256:0.2", "128:0", "128:0.4"],
                        help="hidden:lambda[:KEY=VALUE] (an nnue setting for this one, e.g. "
                        "128:0.2:teacher_search_fraction=1.0); configurations that change the labels go last, "
                        "as the work folder keeps one set of positions and labels")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--nodes", type=int, nargs="+", default=[5000],
                        help="node counts a move; one match of --games games at each, pooled")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "nnue" / "ablations")
    parser.add_argument("--build-arg", action="append", default=[], help="extra argument for nnue build")
    parser.add_argument("--work", default=WORK_NAME, help="build name of the configurations (runs/nnue/<work>)")
    parser.add_argument("--students", nargs="*", default=[], metavar="LABEL=FILE",
                        help="finished students measured the same way (no build), e.g. a bootstrap round's")
    args = parser.parse_args()
    console = Console()
    openings = load_openings(REPO / DEFAULT_OPENINGS)[: args.games // 2]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for spec in args.students:
        label, _, path = spec.partition("=")
        if not path or not Path(path).is_file():
            parser.error(f"--students: want LABEL=FILE with an existing file, got {spec!r}")
        summary_path = Path(path).parent / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
        rows.append(measure(label, Path(path), summary, args, openings, console, hidden=summary.get("hidden", 0),
                            lam=summary.get("lambda", float("nan")), override="(built elsewhere)"))
    for config in args.configs:
        parts = config.split(":")
        hidden, lam = int(parts[0]), float(parts[1])
        override = parts[2] if len(parts) > 2 else ""
        summary = build(args.teacher_campaign, hidden, lam,
                        [*args.build_arg, *(["--set", f"nnue.{override}"] if override else [])], args.work)
        label = f"h{hidden}-l{lam:g}" + (f"-{override.replace('=', '')}" if override else "")
        student = args.out / f"{label}.nnue"
        shutil.copyfile(summary["student"]["path"] if isinstance(summary.get("student"), dict)
                        else REPO / "runs" / "nnue" / args.work / "student.nnue", student)
        rows.append(measure(label, student, summary, args, openings, console, hidden=hidden, lam=lam,
                            override=override))
    lines = [f"# NNUE student ablations ({args.teacher_campaign}, {' and '.join(map(str, args.nodes))} nodes a "
             f"move, {args.games * len(args.nodes)} games vs the control evaluator)", "",
             "| student | N | lambda | bytes | held-out loss | MAE vs teacher (cp) | MAE vs alpha-beta label (cp) | "
             "W/D/L | score | Elo vs control [95%] |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        interval = (f"{'<' if r['score'] == 0 else '>'} {r['elo']:.0f}" if r["elo_is_bound"]
                    else f"{r['elo']:+.0f} [{r['elo_lower']:+.0f}, {r['elo_upper']:+.0f}]")
        loss = "" if r["holdout_loss"] is None else f"{r['holdout_loss']:.5f}"
        mae = "" if r["mae_cp_vs_teacher"] is None else f"{r['mae_cp_vs_teacher']:.1f}"
        mae_ab = "" if r.get("mae_cp_vs_search") is None else f"{r['mae_cp_vs_search']:.1f}"
        lines.append(f"| {r['config']} | {r['hidden']} | {r['lambda']:g} | {r['bytes']:,} | {loss} | {mae} | {mae_ab} | "
                     f"{r['wins']}/{r['draws']}/{r['losses']} | {r['score']:.3f} | {interval} |")
    (args.out / "ablations.md").write_text("\n".join(lines) + "\n")
    (args.out / "ablations.json").write_text(json.dumps(rows, indent=2) + "\n")
    console.print("\n".join(lines))


if __name__ == "__main__":
    main()
