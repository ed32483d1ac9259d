"""``chesszero nnue``: the NNUE student of the alpha-beta engine (``chesszero.nnue``).

- ``nnue build --teacher-campaign NAME``: positions, teacher labels, features,
  training and export in one resumable command (``chesszero.nnue.build``).
- ``nnue eval --net FILE FEN...``: the core's evaluation of each FEN in
  centipawns from the side to move's view.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from chesszero.cli.common import _load_recipe, _recipe_arguments

# flag -> recipe key (the flags are shortcuts for --set nnue.KEY=VALUE)
_SHORTCUTS = {"hidden": "hidden", "lambda_": "lambda", "epochs": "epochs", "max_games": "max_games",
              "max_positions": "max_positions", "search_games": "search_games",
              "search_label_weight": "search_label_weight"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("nnue", help="the NNUE student of the alpha-beta engine: build, evaluate",
                       description="Distils an NNUE evaluator from a teacher campaign (docs/nnue.md).")
    cmds = p.add_subparsers(dest="nnue_command", required=True, metavar="ACTION")
    b = cmds.add_parser(
        "build", help="distil a student from a teacher campaign",
        description="Quiet positions of the teacher's games (and of alpha-beta games), labelled by the "
        "teacher's value head, train the student; it is exported to runs/nnue/<name>/student.nnue with a "
        "report (summary.json, nnue.md) and an MLflow run. Resumes after an interrupt: finished stages are "
        "reused when their inputs match. Settings: the recipe's nnue section (flags below override it).")
    _recipe_arguments(b)
    b.add_argument("--teacher-campaign", required=True, help="the teacher's campaign name (runs/<name>)")
    b.add_argument("--teacher-artifact", type=Path, default=None,
                   help="teacher ONNX artifact (default: the campaign's active artifact)")
    b.add_argument("--name", default=None, help="build name (default: <campaign>-student)")
    b.add_argument("--root", type=Path, default=Path("."), help="project root (runs/, mlruns/)")
    b.add_argument("--out", type=Path, default=None, help="report folder (default: reports/nnue/<name>)")
    b.add_argument("--hidden", type=int, default=None, help="accumulator width (nnue.hidden)")
    b.add_argument("--lambda", dest="lambda_", type=float, default=None, metavar="LAMBDA",
                   help="weight of the game result in the target (nnue.lambda)")
    b.add_argument("--epochs", type=int, default=None, help="training epochs (nnue.epochs)")
    b.add_argument("--max-games", type=int, default=None, help="newest teacher games read (nnue.max_games)")
    b.add_argument("--max-positions", type=int, default=None, help="positions kept (nnue.max_positions)")
    b.add_argument("--search-games", type=int, default=None, help="alpha-beta games (nnue.search_games)")
    b.add_argument("--search-label-weight", type=float, default=None, metavar="W",
                   help="weight of the alpha-beta search's score in the label (nnue.search_label_weight)")
    b.add_argument("--no-mlflow", action="store_true", help="do not record an MLflow run")
    b.add_argument("--quiet", action="store_true", help="no progress bars")
    b.set_defaults(func=_without_traceback(_build))
    e = cmds.add_parser("eval", help="the core's evaluation of positions with a student",
                        description="Prints each FEN's evaluation in centipawns (side to move's view).")
    e.add_argument("--net", type=Path, default=None, help=".nnue file (default: the newest runs/nnue/*/student.nnue)")
    e.add_argument("--root", type=Path, default=Path("."), help="project root for the default --net")
    e.add_argument("fens", nargs="+", metavar="FEN")
    e.set_defaults(func=_without_traceback(_eval))


def _without_traceback(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A core without the NNUE bindings is one line on stderr and exit status 1, not a traceback."""
    def run(args: argparse.Namespace) -> int:
        from chesszero.nnue.native import MissingBindingError

        try:
            return handler(args)
        except MissingBindingError as error:
            print(f"chesszero nnue: {error}", file=sys.stderr)
            return 1
    return run


def _build(args: argparse.Namespace) -> int:
    from chesszero.campaign.context import check_name
    from chesszero.nnue.build import BuildRequest, run_build
    from chesszero.nnue.positions import teacher_campaign

    for flag, key in _SHORTCUTS.items():
        value = getattr(args, flag)
        if value is not None:
            args.set = [*args.set, f"nnue.{key}={value}"]
    cfg = _load_recipe(args)
    root = args.root.resolve()
    name = check_name(args.name or f"{args.teacher_campaign}-student")
    if args.teacher_artifact is not None and not args.teacher_artifact.is_file():
        raise ValueError(f"teacher artifact not found: {str(args.teacher_artifact)!r}")
    teacher = teacher_campaign(root, check_name(args.teacher_campaign), args.teacher_artifact)
    out = args.out or root / "reports" / "nnue" / name
    summary = run_build(BuildRequest(root, name, cfg, teacher, out, track=not args.no_mlflow),
                        progress=not args.quiet)
    keys = ("student", "bytes", "holdout_loss", "mae_cp", "teacher_value_std", "teacher_material_corr",
            "mlflow_run_id")
    print(json.dumps({"report": str(out / "nnue.md"), **{k: summary.get(k) for k in keys},
                      "positions": summary["positions"]["positions"]}, indent=2))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from chesszero.nnue.native import NativeNet
    from chesszero.nnue.paths import latest_student

    net = args.net or latest_student(args.root.resolve())
    if net is None:
        raise ValueError("no student under runs/nnue/: build one with `chesszero nnue build` or pass --net FILE")
    if not Path(net).is_file():
        raise ValueError(f"NNUE file not found: {str(net)!r}")
    for fen, cp in zip(args.fens, NativeNet(net).evaluate_batch(args.fens), strict=True):
        print(f"{int(cp)}\t{fen}")
    return 0
