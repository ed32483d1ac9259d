"""``chesszero campaign run|status``: start, resume or inspect a campaign (``chesszero.campaign.launch``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    campaign = sub.add_parser("campaign", help="run, resume or inspect a campaign",
                              description="A campaign of generations: through the Prefect flow (default) "
                              "or in this process (--no-prefect); the same command resumes it.")
    cmds = campaign.add_subparsers(dest="campaign_command", required=True, metavar="COMMAND")
    for cmd in ("run", "status"):
        p = cmds.add_parser(cmd, help="run or resume the campaign" if cmd == "run" else "print its state")
        p.add_argument("--preset", default="cpu")
        p.add_argument("--name", default=None, help="campaign name (default <preset>-main)")
        p.add_argument("--root", type=Path, default=Path("."), help="project root (params.yaml, data/)")
        if cmd == "run":
            p.add_argument("--generations", type=int, default=None)
            p.add_argument("--hours", type=float, default=None)
            p.add_argument("--no-prefect", action="store_true", help="run the phases in this process")
            p.add_argument("--quiet", action="store_true")
            p.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                           help="recipe override for a new campaign, e.g. --set search.root=gumbel (repeatable; "
                           "stored with the campaign and applied when it resumes)")
        p.set_defaults(func=_run if cmd == "run" else _status)


def _run(args: argparse.Namespace) -> int:
    from chesszero.campaign.launch import run_campaign
    from chesszero.config import parse_overrides

    run_campaign(preset=args.preset, name=args.name, root=args.root, generations=args.generations,
                 hours=args.hours, use_prefect=not args.no_prefect, progress=not args.quiet,
                 overrides=parse_overrides(args.set) or None)
    return 0


def _status(args: argparse.Namespace) -> int:
    from chesszero.campaign.launch import campaign_status

    print(json.dumps(campaign_status(preset=args.preset, name=args.name, root=args.root), indent=2))
    return 0
