"""How well a campaign's value heads track Stockfish, against a material count.

Positions come from the run's own self-play shards (``--shards FIRST LAST``,
a seeded ``--sample`` of the searched rows) or from ladder games (``--pgn
FILE ... --player NAME``: the turns of one player, e.g. the final
benchmark's ``final-searched`` against ``sf-n1``). With ``--shards``,
``--outcomes`` adds how the rows' games ended by the side to move's material
lead: what the outcome target teaches the value head about material.
Stockfish labels each position at ``--depth``; every network named (``--generations``: the newest artifact at
or before each; ``--model``: any file), the run's untrained ``initial``
artifact (the control) and the material balance (``tanh(pawns / 5)``) are
scored by rank correlation, sign agreement on decided positions and mean
error against Stockfish's expected score (``chesszero.evaluate.value_probe``).
Usage::

    python reports/value_probe.py runs/<name> --shards 30 39 --generations 5 20 39 --outcomes
    python reports/value_probe.py runs/<name> --pgn runs/<name>/evals/final-benchmark/final_searched_vs_sf-n1.pgn \\
        --player final-searched --generations 39 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="campaign run folder (holds shards/ and artifacts/)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--shards", type=int, nargs=2, metavar=("FIRST", "LAST"),
                        help="sample the searched rows of these generations' shards")
    source.add_argument("--pgn", type=Path, nargs="+", help="take positions from these PGN files")
    parser.add_argument("--player", help="with --pgn: the PGN player name whose turns are probed")
    parser.add_argument("--skip-plies", type=int, default=0, help="with --pgn: skip the first plies (the book)")
    parser.add_argument("--generations", type=int, nargs="*", default=[],
                        help="score the newest artifact at or before each generation")
    parser.add_argument("--model", type=Path, action="append", default=[], help="also score this ONNX file")
    parser.add_argument("--no-control", action="store_true", help="skip the run's initial (untrained) artifact")
    parser.add_argument("--sample", type=float, default=0.15, help="share of positions kept (seeded)")
    parser.add_argument("--seed", type=int, default=0, help="seed of that sample")
    parser.add_argument("--depth", type=int, default=8, help="Stockfish's search depth per label")
    parser.add_argument("--decided-cp", type=int, default=200,
                        help="a position is decided when Stockfish's |centipawns| reach this")
    parser.add_argument("--outcomes", action="store_true",
                        help="with --shards: also tabulate how the games ended by the side to move's material lead")
    parser.add_argument("--json", type=Path, help="also write the measures as JSON")
    args = parser.parse_args(argv)
    if args.pgn and not args.player:
        parser.error("--pgn needs --player (the PGN White/Black name whose turns are probed)")
    if args.outcomes and not args.shards:
        parser.error("--outcomes needs --shards (the outcome targets of the run's own rows)")

    from rich.console import Console
    from rich.progress import track

    from chesszero.evaluate.mate_recall import latest_artifact, shard_paths
    from chesszero.evaluate.value_probe import (
        label_positions,
        material_value,
        onnx_value,
        outcomes_by_lead,
        pgn_positions,
        replay_positions,
        score_values,
    )

    try:
        if args.shards:
            positions = replay_positions(shard_paths(args.run, *args.shards), sample_fraction=args.sample,
                                         seed=args.seed)
        else:
            positions = pgn_positions(args.pgn, args.player, sample_fraction=args.sample,
                                      skip_plies=args.skip_plies, seed=args.seed)
        if not positions:
            raise ValueError("no positions to probe (check --shards, or --pgn and --player)")
        progress = track(positions, description=f"Stockfish depth {args.depth}",
                         console=Console(stderr=True))  # stdout carries the measures
        labelled = label_positions(progress, depth=args.depth)
        models = {} if args.no_control else {"initial (control)": args.run / "artifacts" / "initial" / "int8.onnx"}
        for g in args.generations:
            path = latest_artifact(args.run, g)
            models[path.parent.name] = path
        for path in args.model:
            models[str(path)] = path
        values = {"material tanh(pawns / 5)": material_value(5.0)}
        values.update({name: onnx_value(path) for name, path in models.items()})
        fits = score_values(labelled, values, decided_cp=args.decided_cp)
        leads = outcomes_by_lead(shard_paths(args.run, *args.shards)) if args.outcomes else []
    except ValueError as exc:
        print(f"value_probe: {exc}", file=sys.stderr)
        return 2
    print(f"{len(labelled)} positions, Stockfish depth {args.depth} (side to move); decided: |cp| >= "
          f"{args.decided_cp}")
    for fit in fits:
        print(f"  {fit.line()}")
    if leads:
        print(f"outcome targets of every searched row of generations {args.shards[0]}..{args.shards[1]}, "
              "by the side to move's material lead:")
        for lead in leads:
            print(f"  {lead.line()}")
    if args.json:
        args.json.write_text(json.dumps({
            "run": str(args.run), "source": {"shards": args.shards} if args.shards else
            {"pgn": [str(p) for p in args.pgn], "player": args.player, "skip_plies": args.skip_plies},
            "sample": args.sample, "seed": args.seed, "depth": args.depth, "decided_cp": args.decided_cp,
            "models": {name: str(path) for name, path in models.items()},
            "fits": [asdict(f) for f in fits], "outcomes_by_lead": [asdict(x) for x in leads]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
