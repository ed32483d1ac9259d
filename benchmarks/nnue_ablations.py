"""NNUE student ablations (issue 23): width N and the result weight lambda, each
student measured by what it is for, games of the alpha-beta search.

Every configuration is built from the same teacher campaign with
``chesszero nnue build`` under one work name (so positions, labels and
features are computed once and only training and export rerun; the
alpha-beta games that add positions use the control evaluator, so every
configuration sees the same data), then plays ``--games`` paired games from
the opening suite against the same search with the control evaluator at
``--nodes`` nodes a move (fixed nodes: the comparison does not move with
machine load). The table gives the held-out loss, the error against the
teacher, the file size and the score with its Elo interval.

Run: ``.venv/bin/python benchmarks/nnue_ablations.py --teacher-campaign NAME
[--configs 128:0.2 64:0.2 256:0.2 128:0 128:0.4] [--games 100] [--nodes 5000]``;
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
from chesszero.evaluate.match import play_match
from chesszero.evaluate.openings import DEFAULT_OPENINGS, load_openings

REPO = Path(__file__).resolve().parents[1]
WORK_NAME = "ablation"


def build(teacher: str, hidden: int, lam: float, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "chesszero", "nnue", "build", "--teacher-campaign", teacher, "--name", WORK_NAME,
           "--hidden", str(hidden), "--lambda", str(lam), "--set", "nnue.search_net=control", "--no-mlflow",
           "--quiet", *extra]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stdout}\n{run.stderr}")
    return json.loads((REPO / "runs" / "nnue" / WORK_NAME / "summary.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher-campaign", required=True)
    parser.add_argument("--configs", nargs="+", default=["128:0.2", "64:0.2", "256:0.2", "128:0", "128:0.4"],
                        help="hidden:lambda[:KEY=VALUE] (an nnue setting for this one, e.g. "
                        "128:0.2:teacher_search_fraction=1.0); configurations that change the labels go last, "
                        "as the work folder keeps one set of positions and labels")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "nnue" / "ablations")
    parser.add_argument("--build-arg", action="append", default=[], help="extra argument for nnue build")
    args = parser.parse_args()
    console = Console()
    openings = load_openings(REPO / DEFAULT_OPENINGS)[: args.games // 2]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for config in args.configs:
        parts = config.split(":")
        hidden, lam = int(parts[0]), float(parts[1])
        override = parts[2] if len(parts) > 2 else ""
        summary = build(args.teacher_campaign, hidden, lam,
                        [*args.build_arg, *(["--set", f"nnue.{override}"] if override else [])])
        label = f"h{hidden}-l{lam:g}" + (f"-{override.replace('=', '')}" if override else "")
        student = args.out / f"{label}.nnue"
        shutil.copyfile(summary["student"]["path"] if isinstance(summary.get("student"), dict)
                        else REPO / "runs" / "nnue" / WORK_NAME / "student.nnue", student)
        me = AlphaBetaPlayer(str(student), nodes=args.nodes, name=label)
        control = AlphaBetaPlayer("control", nodes=args.nodes, name="control")
        try:
            result = play_match(me, control, openings, concurrency=2, max_plies=300)
        finally:
            me.close()
            control.close()
        elo = result.elo(0.0)
        export = summary.get("export", {})
        row = {"config": label, "hidden": hidden, "lambda": lam, "override": override, "bytes": student.stat().st_size,
               "holdout_loss": export.get("holdout_loss_quantised"),
               "mae_cp_vs_teacher": export.get("mae_cp_vs_teacher_quantised"),
               "games": len(result.games), "wins": result.wins, "draws": result.draws, "losses": result.losses,
               "score": result.score, "elo": elo.estimate, "elo_lower": elo.lower, "elo_upper": elo.upper,
               "elo_is_bound": elo.is_bound}
        rows.append(row)
        console.print(f"{label}: score {result.score:.3f} vs control "
                      f"({result.wins}/{result.draws}/{result.losses}), Elo {elo.describe()}")
    lines = [f"# NNUE student ablations ({args.teacher_campaign}, {args.nodes} nodes a move, "
             f"{args.games} games vs the control evaluator)", "",
             "| student | N | lambda | bytes | held-out loss | MAE vs teacher (cp) | W/D/L | score | Elo vs control [95%] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        interval = (f"{'<' if r['score'] == 0 else '>'} {r['elo']:.0f}" if r["elo_is_bound"]
                    else f"{r['elo']:+.0f} [{r['elo_lower']:+.0f}, {r['elo_upper']:+.0f}]")
        loss = "" if r["holdout_loss"] is None else f"{r['holdout_loss']:.5f}"
        mae = "" if r["mae_cp_vs_teacher"] is None else f"{r['mae_cp_vs_teacher']:.1f}"
        lines.append(f"| {r['config']} | {r['hidden']} | {r['lambda']:g} | {r['bytes']:,} | {loss} | {mae} | "
                     f"{r['wins']}/{r['draws']}/{r['losses']} | {r['score']:.3f} | {interval} |")
    (args.out / "ablations.md").write_text("\n".join(lines) + "\n")
    (args.out / "ablations.json").write_text(json.dumps(rows, indent=2) + "\n")
    console.print("\n".join(lines))


if __name__ == "__main__":
    main()
