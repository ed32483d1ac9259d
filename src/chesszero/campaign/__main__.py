"""`python -m chesszero.campaign run|status`: see chesszero.campaign.launch."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from chesszero.campaign.launch import campaign_status, run_campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chesszero campaign")
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in ("run", "status"):
        p = sub.add_parser(cmd)
        p.add_argument("--preset", default="cpu")
        p.add_argument("--name", default=None, help="campaign name (default <preset>-main)")
        p.add_argument("--root", type=Path, default=Path("."), help="project root (params.yaml, data/)")
        if cmd == "run":
            p.add_argument("--generations", type=int, default=None)
            p.add_argument("--hours", type=float, default=None)
            p.add_argument("--no-prefect", action="store_true", help="run the phases in this process")
            p.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            run_campaign(preset=args.preset, name=args.name, root=args.root, generations=args.generations,
                         hours=args.hours, use_prefect=not args.no_prefect, progress=not args.quiet)
        else:
            print(json.dumps(campaign_status(preset=args.preset, name=args.name, root=args.root), indent=2))
    except ValueError as exc:
        print(f"chesszero campaign: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
