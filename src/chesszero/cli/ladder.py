"""``chesszero ladder calibrate|show|rate``: the rating ladder (``chesszero.evaluate.ladder``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chesszero.cli.common import UsageError, add_backend_argument


def add_parser(sub: argparse._SubParsersAction) -> None:
    from chesszero.evaluate.ladder import ANCHOR_RATING, ANCHOR_RUNG, DEFAULT_TABLE
    from chesszero.evaluate.openings import DEFAULT_OPENINGS

    ladder = sub.add_parser("ladder", help="calibrate, show or rate on the rating ladder",
                            description="The rating ladder of fixed opponents (SPEC 10).")
    cmds = ladder.add_subparsers(dest="ladder_command", required=True, metavar="COMMAND")
    cal = cmds.add_parser("calibrate", help="play rung-vs-rung matches and write the table")
    cal.add_argument("--games", type=int, required=True, help="games per pairing (even)")
    cal.add_argument("--out", type=Path, required=True)
    cal.add_argument("--openings", type=Path, default=DEFAULT_OPENINGS)
    cal.add_argument("--rungs", nargs="*", help="subset of rung names (default: all)")
    cal.add_argument("--reach", type=int, default=2)
    cal.add_argument("--concurrency", type=int, default=2)
    cal.add_argument("--anchor", default=ANCHOR_RUNG)
    cal.add_argument("--anchor-rating", type=float, default=ANCHOR_RATING)
    cal.add_argument("--max-plies", type=int, default=300)
    cal.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    cal.set_defaults(func=_calibrate)
    show = cmds.add_parser("show", help="print a stored table")
    show.add_argument("table", type=Path)
    show.set_defaults(func=_show)
    rate = cmds.add_parser("rate", help="rate an ONNX network (or the alpha-beta engine) on a calibrated ladder")
    rate.add_argument("--engine", choices=("network", "alphabeta"), default="network",
                      help="network: an ONNX artifact's tree search (--model); alphabeta: the NNUE "
                      "student or control evaluator under alpha-beta (--net, docs/nnue.md)")
    rate.add_argument("--model", type=Path, default=None, help="ONNX artifact (--engine network)")
    rate.add_argument("--net", default=None,
                      help="--engine alphabeta: .nnue file or 'control' (default: the newest student)")
    rate.add_argument("--movetime-ms", type=int, default=0, help="--engine alphabeta: ms per move")
    rate.add_argument("--nodes", type=int, default=0, help="--engine alphabeta: nodes per move")
    rate.add_argument("--visits", type=int, default=800, help="visits per move (0: policy only)")
    rate.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    rate.add_argument("--openings", type=Path, default=DEFAULT_OPENINGS)
    rate.add_argument("--games", type=int, default=20, help="games per match (even)")
    rate.add_argument("--start", default=None, help="first rung (default: the anchor)")
    rate.add_argument("--max-matches", type=int, default=3)
    rate.add_argument("--concurrency", type=int, default=8)
    rate.add_argument("--threads", type=int, default=1, help="inference threads")
    add_backend_argument(rate, default="ort-cpu")
    rate.add_argument("--max-plies", type=int, default=300)
    rate.add_argument("--json", type=Path, default=None, help="also write the rating here")
    rate.set_defaults(func=_rate)


def _show(args: argparse.Namespace) -> int:
    from chesszero.evaluate.ladder import LadderTable

    print(LadderTable.load(args.table).describe())
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from chesszero.evaluate.ladder import DEFAULT_RUNGS, calibrate
    from chesszero.evaluate.openings import load_openings
    from chesszero.evaluate.progress import RichReporter

    rungs = list(DEFAULT_RUNGS)
    if args.rungs:
        known = {r.name: r for r in DEFAULT_RUNGS}
        unknown = [n for n in args.rungs if n not in known]
        if unknown:
            raise UsageError("chesszero ladder calibrate", f"unknown rungs {unknown}; known: {list(known)}")
        rungs = [known[n] for n in args.rungs]
    if args.anchor not in {r.name for r in rungs}:
        raise UsageError("chesszero ladder calibrate",
                         f"anchor {args.anchor!r} is not among the rungs {[r.name for r in rungs]}")
    table = calibrate(
        load_openings(args.openings),
        games_per_pairing=args.games,
        rungs=rungs,
        anchor=args.anchor,
        anchor_rating=args.anchor_rating,
        reach=args.reach,
        concurrency=args.concurrency,
        max_plies=args.max_plies,
        reporter=None if args.quiet else RichReporter(),
    )
    table.save(args.out)
    print(table.describe())
    return 0


def _rate(args: argparse.Namespace) -> int:
    from chesszero.evaluate.ladder import LadderTable, rate_on_ladder
    from chesszero.evaluate.openings import load_openings

    table = LadderTable.load(args.table)
    if args.games < 2 or args.games % 2:
        raise ValueError(f"--games must be a positive even number, got {args.games}")
    openings = load_openings(args.openings)[: args.games // 2]
    player, budget = _alphabeta_player(args) if args.engine == "alphabeta" else _network_player(args)
    try:
        rating, matches = rate_on_ladder(
            player, table, openings, budget=budget, start=args.start,
            max_matches=args.max_matches, concurrency=args.concurrency, max_plies=args.max_plies)
    finally:
        player.close()
    for match in matches:
        print(match.summary())
    print(rating.describe())
    if args.json is not None:
        args.json.write_text(json.dumps(rating.to_dict(), indent=2) + "\n")
    return 0


def _alphabeta_player(args: argparse.Namespace) -> tuple[Any, str]:
    from chesszero.config import REPO_ROOT
    from chesszero.evaluate.alphabeta_player import AlphaBetaPlayer
    from chesszero.nnue.paths import latest_student

    if args.model is not None:
        raise UsageError("chesszero ladder rate", "--model belongs to --engine network; alphabeta takes --net")
    if (args.nodes > 0) == (args.movetime_ms > 0):
        raise UsageError("chesszero ladder rate", "--engine alphabeta needs exactly one of --nodes and --movetime-ms")
    net = args.net
    if net is None:
        newest = latest_student(REPO_ROOT)
        if newest is None:
            raise UsageError("chesszero ladder rate", "no NNUE student under runs/nnue/; pass --net FILE or --net control")
        net = str(newest)
    # One searcher: the match's slots are searched one after another, so a timed search
    # never shares a core with another of ours.
    player = AlphaBetaPlayer(net, nodes=args.nodes, movetime_ms=args.movetime_ms, engines=1)
    return player, f"{args.nodes} nodes" if args.nodes else f"{args.movetime_ms} ms"


def _network_player(args: argparse.Namespace) -> tuple[Any, str]:
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.publish.loading import load_evaluator

    if args.model is None:
        raise UsageError("chesszero ladder rate", "--engine network needs --model (an ONNX artifact)")
    if args.net is not None or args.nodes or args.movetime_ms:
        raise UsageError("chesszero ladder rate", "--net, --nodes and --movetime-ms belong to --engine alphabeta")
    notes: list[str] = []
    evaluator = load_evaluator(args.model, backend=args.backend, threads=args.threads, warnings=notes)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    visits = args.visits or None
    player = EnginePlayer(evaluator, visits=visits, name=Path(args.model).stem, slots=args.concurrency)
    return player, f"{visits} visits" if visits else "policy only"
