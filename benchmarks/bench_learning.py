"""Learning benchmark: a campaign from random weights for a wall budget, then its curve.

One run (issues 10 and 22, "A learning benchmark that measures learning"):

1. runs the ``--preset`` campaign (default ``cpu``) from random weights under a
   fresh name (``learning-<timestamp>`` or ``--name``) in ``--root`` (default:
   this checkout; the campaign lives in ``<root>/runs/<name>/``), through the
   same command as ``make run`` (``chesszero campaign run``, Prefect unless
   ``--no-prefect``), for ``--hours`` of campaign wall time; the generation
   cap is lifted (``--generations`` sets one);
2. plays the final evaluation (``learning_final``) of two arms under the same
   protocol: the final active artifact and the control, the campaign's
   untrained ``artifacts/initial`` network. Each arm, policy only and at
   ``--visits`` visits, climbs the ladder (random, greedy, sf-n1-r30,
   sf-n1-r10, sf-n1, sf-n300, ...) with ``--openings`` paired openings per
   rung (both colours: twice as many games) until two consecutive rungs
   score below 0.25; the joint rating per arm and mode, and final minus
   control per mode with a bootstrap interval;
3. writes ``<reports>/<name>/`` (default ``<root>/reports/learning/<name>/``):
   ``curve.csv`` (one row per generation, from the campaign's MLflow store:
   ``reports/learning_curve.py``), ``summary.json`` (final evaluation,
   control arm, gains, recipe diff from the ``cpu`` preset, machine, commit,
   wall times, generations, and the host's speed probed before the campaign
   and after the final evaluation: ``host_speed``), ``learning.md`` and
   ``learning.png``
   (``reports/learning.py``; ``dvc repro learning-figure`` redraws them from
   the saved curve);
4. logs the benchmark as an MLflow run (experiment ``learning-benchmark``,
   ``learning_tracking``) tagged with its recipe diff from the ``cpu``
   preset (``recipe.<key>``), with the ratings and gains as metrics.

It takes hours, so ``run_all`` runs it only when named (``OPT_IN``)::

    chesszero bench --only learning --hours 2 [--name N] [--no-prefect]
    make learning HOURS=2
    python benchmarks/bench_learning.py --quick --no-prefect   # smoke scale: minutes

``--quick`` is ``--preset smoke --hours 0.05 --openings 1`` (explicit options
win). An interrupted run continues with the same ``--name`` and ``--resume``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from host_speed import HostSpeed, probe
from learning_final import (
    CONTROL,
    FINAL,
    Arm,
    FinalEvaluation,
    FinalSettings,
    final_evaluation,
    rows_for_report,
)
from learning_tracking import BASE_PRESET, log_benchmark, recipe_diff, recipe_tags
from rich.console import Console
from rich.table import Table
from run_all import machine_description

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "reports"))
from learning import redraw  # noqa: E402  (reports/learning.py)
from learning_curve import curve_from_mlflow, write_csv  # noqa: E402

OPT_IN = True
"""Not in ``run_all``'s default set: a campaign of hours (see ``run_all``)."""

QUICK = {"preset": "smoke", "hours": 0.05, "openings": 1}
FULL = {"preset": "cpu", "hours": 2.0, "openings": 50}
UNCAPPED_GENERATIONS = 1_000_000
"""Passed as ``--generations`` so that only the wall budget ends the campaign."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench_learning", description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=None, help="campaign wall budget (2; quick 0.05)")
    ap.add_argument("--preset", default=None, help="params.yaml preset (cpu; quick smoke)")
    ap.add_argument("--name", default=None, help="campaign name (default learning-<UTC timestamp>)")
    ap.add_argument("--root", type=Path, default=REPO, help="project root: params.yaml, data/, runs/, mlruns/")
    ap.add_argument("--reports", type=Path, default=None,
                    help="folder for <name>/ (default <root>/reports/learning)")
    ap.add_argument("--openings", type=int, default=None,
                    help="final evaluation: paired openings per rung, 2 games each (50; quick 1)")
    ap.add_argument("--visits", type=int, default=64, help="final evaluation: visits per searched move")
    ap.add_argument("--max-plies", type=int, default=None,
                    help="final evaluation ply cap (default: the preset's evaluate.ply_cap)")
    ap.add_argument("--concurrency", type=int, default=16, help="final evaluation: games in flight")
    ap.add_argument("--threads", type=int, default=1, help="final evaluation: inference threads")
    ap.add_argument("--workers", type=int, default=0,
                    help="final evaluation: climbs played side by side (0: one per usable CPU)")
    ap.add_argument("--generations", type=int, default=None, help="generation cap (default: none)")
    ap.add_argument("--no-prefect", action="store_true", help="run the campaign without Prefect")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                    help="recipe override of an ablation, e.g. --set search.root=gumbel (repeatable; stored with "
                    "the campaign, tagged on its MLflow run as its recipe diff)")
    ap.add_argument("--resume", action="store_true", help="continue an existing campaign of --name")
    ap.add_argument("--json", type=Path, action="append", default=[],
                    help="also write run_all's JSON here (repeatable: every path given gets it, so a "
                         "--json passed through `make learning LEARNING_ARGS=...` keeps run_all's own)")
    ap.add_argument("--quick", action="store_true", help=f"smoke scale: {QUICK}")
    args = ap.parse_args(argv)
    args.command = shlex.join(["python", "benchmarks/bench_learning.py", *argv])
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.root = args.root.resolve()
    args.name = args.name or f"learning-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"
    args.reports = (args.reports or args.root / "reports" / "learning").resolve()
    if args.hours <= 0 or args.openings < 1 or args.visits < 1:
        ap.error("--hours, --openings and --visits must be positive")
    if args.workers < 0:
        ap.error("--workers must be >= 0 (0: one per usable CPU)")
    return args


def campaign_command(args: argparse.Namespace) -> list[str]:
    """The campaign run, as ``make run`` starts it."""
    gens = args.generations if args.generations is not None else UNCAPPED_GENERATIONS
    return [sys.executable, "-m", "chesszero", "campaign", "run", "--preset", args.preset, "--name", args.name,
            "--root", str(args.root), "--hours", f"{args.hours:g}", "--generations", str(gens),
            *(["--no-prefect"] if args.no_prefect else []),
            *[x for item in args.set for x in ("--set", item)]]


def run_campaign(args: argparse.Namespace, console: Console) -> float:
    """Runs the campaign in a child process (its own live display); returns wall seconds."""
    env = dict(os.environ)
    env.setdefault("PREFECT_HOME", str(args.root / ".prefect"))  # as the Makefile sets it
    command = campaign_command(args)
    console.rule(f"campaign {args.name}: {args.preset} preset, {args.hours:g} h")
    console.print(" ".join(command[1:]), soft_wrap=True)
    began = time.monotonic()
    code = subprocess.run(command, cwd=args.root, env=env, check=False).returncode
    if code != 0:
        raise RuntimeError(f"campaign exited with status {code}; after fixing the cause, continue it with "
                           f"--name {args.name} --resume")
    return time.monotonic() - began


def summary_dict(args: argparse.Namespace, state: Any, final: FinalEvaluation, settings: FinalSettings,
                 search: dict[str, Any], generations: int, wall: dict[str, float], started: str,
                 revision: tuple[str, bool], sizes: list[str], diff: dict[str, str],
                 speeds: tuple[HostSpeed, HostSpeed], stages: list[dict[str, Any]]) -> dict[str, Any]:
    """`speeds`: the host's speed before the campaign and after the final evaluation (``host_speed``);
    `stages`: the campaign's wall time per stage (``phaselog.stage_times``, ``StageTime.to_dict``);
    `revision`: the commit (and whether the tree was dirty) when the benchmark started;
    `sizes`: the network sizes of the recipe (model.size, then progressive.stages);
    `diff`: the recipe's differences from the ``cpu`` preset (``learning_tracking.recipe_diff``)."""
    commit, dirty = revision
    machine = machine_description()
    return {
        "benchmark": "learning",
        "campaign": args.name,
        "preset": args.preset,
        "hours": args.hours,
        "generations": generations,
        "command": args.command,
        "started": started,
        "root": str(args.root),
        "prefect": not args.no_prefect,
        "machine": {**machine, "nproc": machine.get("usable_cpus")},
        "git": {"commit": commit, "dirty": dirty},
        "host_speed": {"before": speeds[0].to_dict(), "after": speeds[1].to_dict(),
                       "changed": speeds[1].differs(speeds[0])},
        "wall": {k: round(v, 1) for k, v in wall.items()},
        "stages": stages,
        "final_artifact": state.active_artifact,
        "active_generation": state.active_generation,
        "control_artifact": next((str(a.artifact) for a in settings.arms if a.name == CONTROL), None),
        "sizes": sizes,
        "recipe_base": BASE_PRESET,
        "recipe_diff": diff,
        "final_evaluation": {
            "openings": settings.openings,
            "games_per_match": 2 * settings.openings,
            "visits": settings.visits,
            "max_plies": settings.max_plies,
            "resamples": settings.resamples,
            "opponents": final.order,
            "climb": {"order": final.order, "below": settings.rule.below,
                      "consecutive": settings.rule.consecutive, "rule": settings.rule.describe()},
            "arms": [a.name for a in settings.arms],
            "search": search,
            "ladder": final.ladder,
            "games_dir": str(settings.games_dir),
            "matches": [m.to_dict() for m in final.matches],
            "joint": final.joint.get(FINAL, {}),
            "joints": final.joint,
            "gain": final.gain,
        },
    }


FIT_GENERATIONS = 10
FIT_SAMPLE = 0.15


def fit_section(run_dir: Path, last: int, arms: dict[str, Path], console: Console) -> dict[str, Any] | None:
    """How each arm's policy fits the run's own self-play positions of its last
    ``FIT_GENERATIONS`` generations, ``last`` the last one played
    (``chesszero.evaluate.mate_recall``): top move = the stored target's top
    move on a seeded sample, and mates in one taken where one was on the
    board. None, with a warning naming the cause, when the shards cannot be read."""
    from chesszero.evaluate.mate_recall import onnx_policy, own_target_fit, scan_replay, shard_paths

    first = max(0, last - FIT_GENERATIONS + 1)
    try:
        scan = scan_replay(shard_paths(run_dir, first, last), sample_fraction=FIT_SAMPLE, seed=0)
        fit: dict[str, Any] = {"generations": [first, last], "rows": scan.rows, "sample_fraction": FIT_SAMPLE}
        for arm, model in arms.items():
            fit[arm] = own_target_fit(scan, onnx_policy(model))
    except ValueError as exc:  # the report is still written, without this section
        console.print(f"[yellow]warning: no fit to the run's own targets: {exc}[/yellow]")
        return None
    return fit


def print_table(final: FinalEvaluation, console: Console) -> None:
    table = Table(title="final evaluation")
    for col in ("arm", "opponent", "mode", "games", "+W =D -L", "score", "95% interval", "conversion", "stalemates",
                "mates in one"):
        table.add_column(col, justify="left" if col in ("arm", "opponent", "mode") else "right")
    for m in final.matches:
        conv = "-" if m.conversion_opportunities is None else f"{m.conversion_converted}/{m.conversion_opportunities}"
        table.add_row(m.arm, m.opponent, m.mode if m.visits is None else f"{m.mode} ({m.visits})", str(m.games),
                      f"+{m.wins} ={m.draws} -{m.losses}", f"{m.score:.3f}",
                      f"[{m.score_lo:.3f}, {m.score_hi:.3f}]", conv, str(m.stalemates),
                      "-" if m.mate_in_one_available is None else f"{m.mate_in_one_played}/{m.mate_in_one_available}")
    console.print(table)
    for arm, modes in final.joint.items():
        for mode, rating in modes.items():
            console.print(f"{arm} {mode}: {rating['describe']}")
    for mode, gain in final.gain.items():
        console.print(f"[bold]{mode}: final minus control {gain['describe']}[/bold]")


def recipe_of(campaign: Any, root: Path) -> dict[str, str]:
    """The campaign's recipe (as it started: ``config.json``) against the
    ``cpu`` preset of `root`'s params.yaml."""
    from chesszero.campaign.context import fill_added_keys
    from chesszero.config import load_config

    path = campaign.paths.config
    now = campaign.cfg.model_dump(mode="json")
    recipe = json.loads(path.read_text())["recipe"] if path.is_file() else now
    fill_added_keys(recipe, now)  # keys added since it started, at the values it ran with, are no difference
    base = load_config(root / "params.yaml", preset=BASE_PRESET).model_dump(mode="json")
    return recipe_diff(recipe, base)


def gain_target(mode: str, gain: dict[str, Any]) -> dict[str, Any] | None:
    """Issue 22's target for a mode's learning gain (``benchmarks/targets.py``),
    or None when the gain cannot be judged against it: undetermined, or a bound
    on the side that does not decide (``> 300`` against ``>= 800``)."""
    from targets import TARGETS

    t = TARGETS.get(f"learning-gain-{'searched' if mode == 'searched' else 'policy'}")
    if t is None or gain["direction"] not in ("", ">", "<"):
        return None
    est = float(gain["estimate"])
    if (gain["direction"] == ">" and not t.holds(est)) or (gain["direction"] == "<" and t.holds(est)):
        return None
    return t.as_dict()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    console = Console(stderr=True)
    from chesszero.campaign import phaselog
    from chesszero.campaign.context import Campaign, check_name
    from chesszero.campaign.search_settings import evaluation_search
    from chesszero.campaign.tracking import git_revision, tracking_uri
    from chesszero.config import parse_overrides
    from chesszero.train.threads import usable_cpus

    try:
        check_name(args.name)
        # with --set, open as the campaign will run (its search rule is the evaluation's too)
        campaign = Campaign.open(args.root, args.name, preset=args.preset,
                                 overrides=parse_overrides(args.set) or None)
    except (ValueError, FileNotFoundError) as exc:
        console.print(f"bench_learning: error: {exc}")
        return 2
    if campaign.paths.dir.exists() and not args.resume:
        console.print(f"bench_learning: error: campaign {args.name!r} already exists in {campaign.paths.dir}; "
                      "the benchmark starts from random weights: choose a fresh --name (or --resume)")
        return 2
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    revision = git_revision(REPO)  # the code that runs, not whatever is checked out hours later
    began = time.monotonic()
    probe_size = campaign.cfg.model.size
    before = probe(probe_size, quick=args.quick)
    console.print(f"host speed before the campaign: {before.describe()}")
    try:
        campaign_s = run_campaign(args, console)
    except KeyboardInterrupt:
        console.print(f"interrupted: continue with --name {args.name} --resume")
        return 130
    except RuntimeError as exc:
        console.print(f"bench_learning: {exc}")
        return 1
    campaign = Campaign.open(args.root, args.name, preset=args.preset)  # with the overrides it stored
    state = campaign.load_state()
    if state.active_artifact is None:
        console.print("bench_learning: the campaign has no active artifact")
        return 1
    control = campaign.paths.artifact_dir(None) / "int8.onnx"
    if not control.is_file():
        console.print(f"bench_learning: the control arm's artifact {control} (the untrained network) is missing")
        return 1
    ev = campaign.cfg.evaluate
    settings = FinalSettings(
        arms=(Arm(FINAL, Path(state.active_artifact)), Arm(CONTROL, control)),
        ladder=args.root / "data" / "ladder.json", openings_file=args.root / "data" / "openings" / "openings.epd",
        games_dir=campaign.paths.dir / "evals" / "final-benchmark", openings=args.openings, visits=args.visits,
        max_plies=args.max_plies or ev.ply_cap, resamples=ev.bootstrap_resamples,
        concurrency=args.concurrency, threads=args.threads, workers=args.workers or usable_cpus(),
        search=lambda: evaluation_search(campaign.cfg))
    console.rule(f"final evaluation: final and control arms climb the ladder, {2 * args.openings} games per rung, "
                 f"policy and {args.visits} visits; {settings.rule.describe()}")
    eval_began = time.monotonic()
    final = final_evaluation(settings, console)
    eval_s = time.monotonic() - eval_began
    after = probe(probe_size, quick=args.quick)
    console.print(f"host speed after the final evaluation: {after.describe()}")
    if after.differs(before):
        perft, train = after.ratios(before)
        console.print(f"[yellow]warning: the host's speed changed during the run (after / before: perft "
                      f"{perft:.2f}x, training {train:.2f}x); its wall-clock figures mix recipe and host[/yellow]")

    out = args.reports / args.name
    curve = curve_from_mlflow(tracking_uri(args.root), args.name)
    write_csv(curve, out / "curve.csv")
    wall = {"campaign_s": campaign_s, "campaign_recorded_s": state.wall_seconds, "final_evaluation_s": eval_s,
            "total_s": time.monotonic() - began}
    search = campaign.cfg.search.model_dump(mode="json")
    sizes = [campaign.cfg.model.size, *campaign.cfg.progressive.stages]
    diff = recipe_of(campaign, args.root)
    stages = [t.to_dict() for t in phaselog.stage_times(phaselog.read(campaign.paths.phase_log))]
    summary = summary_dict(args, state, final, settings, search, len(curve.rows), wall, started,
                           revision, sizes, diff, (before, after), stages)
    fit = fit_section(campaign.paths.dir, max(0, state.generation - 1),
                      {a.name: a.artifact for a in settings.arms}, console)
    if fit is not None:
        summary["own_targets"] = fit
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    figure, table = redraw(out)
    print_table(final, console)
    run_id = log_benchmark(args.root, summary, out, recipe_tags(diff))
    console.print(f"{len(curve.rows)} generations; wrote {out / 'curve.csv'}, {out / 'summary.json'}, "
                  f"{table.name}, {figure.name}; MLflow run {run_id} (experiment learning-benchmark, "
                  f"{len(diff)} recipe keys differ from the {BASE_PRESET} preset)")
    if args.json:
        rows = rows_for_report(final.matches) + [
            {"name": f"learning gain over the untrained network, {mode}", "rate": gain["estimate"], "unit": "Elo",
             "reference": gain["describe"], "ratio": None, "extra": {"direction": gain["direction"]},
             "target": gain_target(mode, gain)}
            for mode, gain in final.gain.items()] + [
            {"name": "generations", "rate": float(len(curve.rows)), "unit": "generations",
             "reference": f"{args.hours:g} h budget, {args.preset} preset", "ratio": None, "extra": {}}]
        text = json.dumps({
            "title": f"{args.preset} preset from random weights, {args.hours:g} h, campaign {args.name} "
                     f"(see {out.relative_to(args.root) if out.is_relative_to(args.root) else out})",
            "machine": summary["machine"], "rows": rows}, indent=2) + "\n"
        for path in args.json:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
