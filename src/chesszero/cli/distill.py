"""``chesszero distill``: a compact student distilled from a teacher campaign's
checkpoint and replay snapshots, published and matched against the teacher
(``chesszero.campaign.distill``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from chesszero.cli.common import _load_recipe, _recipe_arguments


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "distill", help="a compact student from a teacher campaign, measured against it",
        description="Trains the distill.student_size network from frozen replay snapshots with the "
        "distill.supervision targets (replay, teacher or mix), publishes student and teacher through "
        "the fidelity gate, plays paired matches at equal visits and at equal wall time per move, and "
        "writes the report (table, figure, summary.json) and an MLflow run linked to the teacher's.")
    _recipe_arguments(p)
    p.add_argument("--teacher-campaign", required=True, help="the teacher's campaign name (runs/<name>)")
    p.add_argument("--teacher-checkpoint", type=Path, default=None,
                   help="teacher training checkpoint (default: runs/<campaign>/train.pt)")
    p.add_argument("--snapshot", type=Path, action="append", default=[],
                   help="replay snapshot folder (repeatable; default: the campaign's newest)")
    p.add_argument("--name", default=None, help="distillation name (default: <campaign>-student)")
    p.add_argument("--root", type=Path, default=Path("."), help="project root (runs/, data/, mlruns/)")
    p.add_argument("--out", type=Path, default=None, help="report folder (default: reports/distill/<name>)")
    p.add_argument("--no-matches", action="store_true", help="train, publish and report without matches")
    p.add_argument("--ladder", action="append", default=[], metavar="RUNG",
                   help="also play the student against this ladder rung (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_distill)


def _distill(args: argparse.Namespace) -> int:
    from chesszero.campaign.context import check_name
    from chesszero.campaign.distill import (
        DistillRequest,
        latest_snapshot,
        run_distill,
        teacher_of_campaign,
    )

    cfg = _load_recipe(args)
    root = args.root.resolve()
    name = check_name(args.name or f"{args.teacher_campaign}-student")
    teacher = teacher_of_campaign(root, args.teacher_campaign, args.teacher_checkpoint)
    snapshots = tuple(args.snapshot) or (latest_snapshot(root, args.teacher_campaign),)
    for snap in snapshots:
        if not (snap / "meta.json").is_file():
            raise ValueError(f"not a replay snapshot (no meta.json): {str(snap)!r}")
    out = args.out or root / "reports" / "distill" / name
    summary = run_distill(DistillRequest(root, name, cfg, teacher, tuple(s.resolve() for s in snapshots), out,
                                         matches=not args.no_matches, ladder_rungs=tuple(args.ladder)),
                          progress=not args.quiet)
    keys = ("equal_visits", "equal_time", "ladder")
    print(json.dumps({"report": str(out / "distill.md"), "student": summary["publish"]["student"]["artifact"],
                      "mlflow_run_id": summary["mlflow_run_id"], **{k: summary[k] for k in keys if k in summary}},
                     indent=2))
    return 0
