"""One generation of a learning run, re-evaluated under the final evaluation's protocol.

Two runs compared by wall clock mix recipe and host when their hosts differ in
speed (``benchmarks/host_speed.py``). Compared at the same generation, they
compare the same number of optimizer steps (the schedule is per generation).
This plays one generation's gated artifact of a campaign through the learning
benchmark's final evaluation (``learning_final``): policy-only and searched
climbs of the ladder, the campaign's own evaluation search, the same openings
and rules, no control arm. It writes ``<reports>/<name>/generation_<N>.json``
(matches and joint ratings) and prints the joint ratings::

    python benchmarks/eval_generation.py --name mlhd-1h-s1 --generation 39 --openings 20

``--search KEY=YAML`` changes the evaluation search for this re-evaluation
only (keys of the recipe's ``search`` section, e.g. ``--search root=puct``
to play a Gumbel-trained network with the PUCT root, or
``--search c_puct_eval=0.7``): the network is the same, so two such runs
compare searches, not training. The JSON then records the changes and is
named ``generation_<N>-<tag>.json`` (``--tag``, default the changes joined).

Exit status 2 names the problem when the campaign, the generation's artifact
or its passed gate is missing, or a ``--search`` change is not a valid recipe.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

from learning_final import FINAL, Arm, FinalSettings, final_evaluation
from rich.console import Console

REPO = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="campaign name (runs/<name>)")
    parser.add_argument("--generation", type=int, required=True, help="the generation whose artifact plays")
    parser.add_argument("--root", type=Path, default=REPO, help="project root: data/, runs/")
    parser.add_argument("--reports", type=Path, default=None, help="folder for <name>/ (default <root>/reports/learning)")
    parser.add_argument("--openings", type=int, default=50, help="paired openings per rung, 2 games each")
    parser.add_argument("--visits", type=int, default=64, help="visits per searched move")
    parser.add_argument("--max-plies", type=int, default=None, help="ply cap (default: the preset's evaluate.ply_cap)")
    parser.add_argument("--concurrency", type=int, default=16, help="games in flight")
    parser.add_argument("--threads", type=int, default=1, help="inference threads")
    parser.add_argument("--workers", type=int, default=0, help="climbs played side by side (0: one per usable CPU)")
    parser.add_argument("--search", action="append", default=[], metavar="KEY=YAML",
                        help="change the evaluation search for this run only (a key of the recipe's search "
                             "section, e.g. root=puct); repeatable")
    parser.add_argument("--tag", default=None, help="output name suffix with --search (default: the changes)")
    args = parser.parse_args(argv)
    if args.generation < 0 or args.openings < 1 or args.visits < 1:
        parser.error("--generation must be >= 0, --openings and --visits >= 1")
    if args.workers < 0:
        parser.error("--workers must be >= 0 (0: one per usable CPU)")
    if args.tag is not None and (not args.search or not re.fullmatch(r"[A-Za-z0-9_.=-]+", args.tag)):
        parser.error("--tag needs --search and may hold only letters, digits and _ . = -")
    return args


def search_changes(items: list[str]) -> dict[str, object]:
    """``["root=puct"]`` -> ``{"search.root": "puct"}``; ValueError names a malformed item."""
    from chesszero.campaign.search_settings import search_overrides
    from chesszero.config.loader import ConfigError

    try:
        return search_overrides(items)
    except ConfigError as exc:
        raise ValueError(f"--search: {exc}") from None


def suffix(changes: dict[str, object], tag: str | None) -> str:
    """``""``, or ``-<tag>`` when the search was changed (``tag`` defaults to the changes joined)."""
    if not changes:
        return ""
    if tag is None:
        tag = "_".join(f"{key.removeprefix('search.')}={value}" for key, value in changes.items())
        tag = re.sub(r"[^A-Za-z0-9_.=-]+", "", tag)
    return f"-{tag}"


def gated_artifact(campaign_dir: Path, generation: int) -> Path:
    """The generation's INT8 artifact, only if its fidelity gate passed; ValueError names what is missing."""
    folder = campaign_dir / "artifacts" / f"gen_{generation:04d}"
    marker = folder / "publish.json"
    if not marker.is_file():
        raise ValueError(f"generation {generation} of {campaign_dir.name} has no published artifact ({marker})")
    try:
        published = json.loads(marker.read_text())
        published["artifact"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"generation {generation} of {campaign_dir.name}: unreadable {marker} ({exc!r})") from exc
    if not published.get("passed"):
        raise ValueError(f"generation {generation} of {campaign_dir.name} failed its fidelity gate ({marker})")
    artifact = Path(published["artifact"])
    if not artifact.is_file():
        raise ValueError(f"generation {generation} of {campaign_dir.name}: artifact {artifact} is missing")
    return artifact


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    console = Console(stderr=True)
    from chesszero.campaign.context import Campaign, CampaignPaths, check_name
    from chesszero.campaign.search_settings import evaluation_search
    from chesszero.campaign.state import StateStore
    from chesszero.train.threads import usable_cpus

    try:
        check_name(args.name)
        states = StateStore(CampaignPaths(args.root.resolve() / "runs" / args.name).state)
        if not states.exists():
            raise ValueError(f"campaign {args.name!r} not found under {args.root / 'runs'} (no state.json)")
        # its own preset, with the overrides it stored: the evaluation search is the campaign's
        campaign = Campaign.open(args.root, args.name, preset=states.load().preset)
        artifact = gated_artifact(campaign.paths.dir, args.generation)
        changes = search_changes(args.search)
        cfg = campaign.cfg
        if changes:  # the campaign's own recipe, then this run's search changes
            from chesszero.config import load_config
            from chesszero.config.loader import ConfigError

            try:
                cfg = load_config(args.root / "params.yaml", preset=campaign.preset,
                                  overrides={**campaign.overrides, **changes})
            except ConfigError as exc:
                raise ValueError(f"--search {' '.join(args.search)}: {exc}") from None
        evaluation_search(cfg)  # checked once before any game is played
    except (ValueError, FileNotFoundError) as exc:
        console.print(f"eval_generation: error: {exc}")
        return 2
    ev = campaign.cfg.evaluate
    tail = suffix(changes, args.tag)
    settings = FinalSettings(
        arms=(Arm(FINAL, artifact),), ladder=args.root / "data" / "ladder.json",
        openings_file=args.root / "data" / "openings" / "openings.epd",
        games_dir=campaign.paths.dir / "evals" / f"final-generation-{args.generation:04d}{tail}",
        openings=args.openings, visits=args.visits, max_plies=args.max_plies or ev.ply_cap,
        resamples=ev.bootstrap_resamples, concurrency=args.concurrency, threads=args.threads,
        workers=args.workers or usable_cpus(), search=lambda: evaluation_search(cfg))
    began = time.monotonic()
    try:
        final = final_evaluation(settings, console)
    except (ValueError, FileNotFoundError) as exc:  # e.g. more --openings than the suite holds
        console.print(f"eval_generation: error: {exc}")
        return 2
    out = (args.reports or args.root / "reports" / "learning") / args.name / f"generation_{args.generation}{tail}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "campaign": args.name, "generation": args.generation, "artifact": str(artifact),
        "openings": args.openings, "visits": args.visits, "max_plies": settings.max_plies,
        "search_changes": changes,
        "seconds": round(time.monotonic() - began, 1), "order": final.order, "ladder": final.ladder,
        "joint": final.joint[FINAL], "matches": [asdict(m) for m in final.matches]}, indent=1) + "\n")
    for mode, rating in final.joint[FINAL].items():
        console.print(f"generation {args.generation} {mode}: {rating['describe']}")
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
