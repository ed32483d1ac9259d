"""``chesszero study NAME [--quick]``: run a failure study (issue 12) and write its report;
``chesszero study index`` regenerates ``reports/failures/index.md`` alone."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "study", help="run a failure study and write reports/failures/NAME.md",
        description="Failure studies (paper chapter 6, reference 004): late-game-targets (6.1), "
        "refit-drift (6.2), promotion-loss (6.3), draw-cycle (reference 004). "
        "'index' rewrites reports/failures/index.md from the reports present.")
    p.add_argument("name", help="late-game-targets | refit-drift | promotion-loss | draw-cycle | index")
    p.add_argument("--quick", action="store_true", help="CI scale (about a minute) instead of the small scale")
    p.add_argument("--project", type=Path, default=Path("."), help="project root: params.yaml, data/ (default .)")
    p.add_argument("--out", type=Path, default=None, help="report folder (default PROJECT/reports/failures)")
    p.add_argument("--work", type=Path, default=None, help="work folder (default PROJECT/runs/studies)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_study)


def _study(args: argparse.Namespace) -> int:
    from chesszero.studies.context import Scale
    from chesszero.studies.index import write_index
    from chesszero.studies.run import STUDIES, run_study

    project = args.project.resolve()
    out = (args.out or project / "reports" / "failures").resolve()
    if args.name == "index":
        print(write_index(out))
        return 0
    if args.name not in STUDIES:
        raise ValueError(f"unknown study {args.name!r}; known: {', '.join([*STUDIES, 'index'])}")
    if not (project / "params.yaml").is_file():
        raise ValueError(f"no params.yaml under the project root {str(project)!r}")
    path = run_study(args.name, Scale.QUICK if args.quick else Scale.SMALL, project=project, out=out,
                     work_root=args.work, seed=args.seed)
    print(path)
    return 0
