"""The `chesszero` command line. Each subcommand parses its arguments here
and calls into the package; no chess or learning logic lives in this file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _demo(args: argparse.Namespace) -> int:
    from chesszero.demo import run_demo

    run_demo(games=args.games, seed=args.seed)
    return 0


def _perft(args: argparse.Namespace) -> int:
    from chesszero import core

    game = core.Game(args.fen)
    print(game.perft(args.depth))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chesszero", description="AlphaZero-style chess self-play")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="tour of the native core (perft, random games, encoding)")
    demo.add_argument("--games", type=int, default=20)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_demo)
    perft = sub.add_parser("perft", help="count leaf nodes of the move tree")
    perft.add_argument("depth", type=int)
    perft.add_argument("--fen", default=None)
    perft.set_defaults(func=_perft)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as exc:  # bad input: one clear line, no traceback
        print(f"chesszero: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
