"""The campaign's evaluation stage: its ladder matches one at a time, then side by side.

Each model search of a ladder match runs on one core (a one-thread ONNX
Runtime session, the tree search in the same thread), so an evaluation that
plays its matches one after another leaves the other cores idle; measured in
a one-hour ``cpu`` campaign, the evaluate stage kept 1.06 of 2 cores busy.
``evaluate.parallel_matches`` (0: one per usable CPU) plays them side by side.

This benchmark bootstraps a campaign of the preset in a temporary project
root (its untrained network, published and gated as a campaign publishes
it), picks the rungs the campaign's first evaluation plays
(``eval_stage.rungs_for``) and runs ``eval_stage.rate_model`` on them twice,
searched at the preset's ``evaluate.visits``: with ``parallel_matches: 1``
(the reference) and with the preset's setting. Both must play the same games
(checked: the scores agree; the tests compare game by game). Rows: games/s
each way, and the ratio (target ``eval-parallel-matches``: >= 1.4x on a
machine with 2 or more usable CPUs; with one CPU the setting has nothing to
share and the target is missed).

Usage::

    python benchmarks/bench_eval.py [--preset cpu] [--openings 4] [--json reports/bench/eval.json] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from common import Row, report
from targets import target

from chesszero.config import ConfigError

ROOT = Path(__file__).resolve().parent.parent
QUICK = {"openings": 1, "visits": 8}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu", help="params.yaml preset (its evaluate section)")
    parser.add_argument("--openings", type=int, default=None,
                        help="paired openings per match (default 4: 8 games per match; quick 1)")
    parser.add_argument("--visits", type=int, default=None,
                        help="visits per searched move (default: the preset's evaluate.visits; quick 8)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument("--quick", action="store_true", help=f"smoke scale: {QUICK}")
    args = parser.parse_args(argv)
    if args.quick:
        args.openings = QUICK["openings"] if args.openings is None else args.openings
        args.visits = QUICK["visits"] if args.visits is None else args.visits
    args.openings = 4 if args.openings is None else args.openings
    if args.openings < 1 or (args.visits is not None and args.visits < 1):
        parser.error("--openings and --visits must be >= 1")
    return args


def project(folder: Path) -> Path:
    """A throwaway project root: this checkout's recipe and data files."""
    shutil.copy(ROOT / "params.yaml", folder / "params.yaml")
    shutil.copytree(ROOT / "data", folder / "data", ignore=shutil.ignore_patterns("replay"))
    return folder


def main(argv: list[str] | None = None) -> None:
    from chesszero.campaign import runner
    from chesszero.campaign.context import Campaign
    from chesszero.campaign.eval_stage import match_workers, rate_model, rungs_for

    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            campaign = Campaign.open(project(Path(tmp)), "bench-eval", preset=args.preset)
        except (ConfigError, ValueError) as exc:
            raise SystemExit(f"bench_eval.py: {exc}") from None
        ev = campaign.cfg.evaluate
        visits = ev.visits if args.visits is None else args.visits
        setting = ev.parallel_matches
        state = runner.bootstrap(campaign)  # publishes and gates the untrained network
        rungs = rungs_for(campaign, "searched", 0)
        workers = match_workers(setting, len(rungs))
        timed: dict[int, tuple[float, dict[str, float]]] = {}
        for parallel in (1, setting):
            campaign.cfg = campaign.cfg.model_copy(update={"evaluate": ev.model_copy(
                update={"parallel_matches": parallel, "openings": args.openings})})
            began = time.perf_counter()
            rated = rate_model(campaign, str(state.active_artifact), visits, Path(tmp) / f"p{parallel}",
                               "searched", rungs)
            timed[parallel] = (time.perf_counter() - began, rated["scores"])
    (serial_s, serial_scores), (side_s, side_scores) = timed[1], timed[setting]
    if serial_scores != side_scores:
        raise SystemExit(f"bench_eval.py: the matches side by side scored {side_scores}, one at a time "
                         f"{serial_scores}: the games must not depend on the setting")
    games = 2 * args.openings * len(rungs)
    out = [
        Row(f"evaluation, {len(rungs)} matches one at a time", games / serial_s, "games/s",
            extra={"seconds": round(serial_s, 1)}),
        Row(f"evaluation, matches side by side ({workers} at once)", games / side_s, "games/s",
            "one at a time", serial_s / side_s, extra={"seconds": round(side_s, 1)},
            target=target("eval-parallel-matches")),
    ]
    meta = {"preset": args.preset, "rungs": rungs, "openings": args.openings, "visits": visits,
            "parallel_matches": setting, "workers": workers, "scores": serial_scores}
    report("evaluation stage: ladder matches one at a time vs side by side", out, args.json, meta=meta)


if __name__ == "__main__":
    main()
