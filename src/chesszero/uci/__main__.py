"""``python -m chesszero.uci [--model PATH] [--visits N] [--threads T]``: a UCI session on stdio."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from chesszero.uci.engine import run_uci


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chesszero.uci", description=__doc__)
    parser.add_argument("--model", default=None, help="ONNX artifact (default: uniform evaluator)")
    parser.add_argument("--visits", type=int, default=800, help="visit cap per move (0: none)")
    parser.add_argument("--threads", type=int, default=1, help="inference threads")
    parser.add_argument("--parallel-leaves", type=int, default=None, help="in-flight leaves per tree")
    args = parser.parse_args(argv)
    return run_uci(
        args.model,
        args.visits,
        args.threads,
        sys.stdin,
        sys.stdout,
        parallel_leaves=args.parallel_leaves,
    )


if __name__ == "__main__":
    sys.exit(main())
