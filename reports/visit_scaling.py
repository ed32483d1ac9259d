"""Searched strength against visits: does more search buy strength from a campaign's network?

Rates a campaign's active artifact (or ``--model``) at each of ``--visits`` on
the named rungs, with the campaign's own evaluation search, openings and
ladder (``eval_stage.rate_model``, what the campaign's evaluations play),
and prints each joint rating with its 95% interval. ``--control`` rates the
run's untrained ``initial`` artifact the same way. A network whose rating
climbs steeply with visits is bounded by the search budget; one that stays
level is bounded by what its value and policy know (docs/learning.md).
``--material-assist W ...`` plays each budget again with the material count
blended into the leaf values at weight W (the self-play assist's form,
``tanh(pawns / selfplay.material_scale)``): if a weak value head is what
holds the searched player back, a material count should lift it.
``--leaf-material W ...`` does the same inside the tree with the count
resolved by a captures-only quiescence search of ``--leaf-depth`` plies
(``SearchOptions.leaf_material``): a piece left en prise then counts as lost.
``--search KEY=YAML`` (repeatable) changes the evaluation search for this
run only (keys of the recipe's ``search`` section, e.g. ``c_puct_eval=2.0``),
on top of the campaign's own recipe and overrides; the match files then
carry the changes in their names.
Matches are written under ``--out`` (PGN and JSON per match). Usage::

    python reports/visit_scaling.py ROOT NAME --visits 64 256 --rungs sf-n1-r10 sf-n1 --openings 20
    python reports/visit_scaling.py ROOT NAME --visits 64 256 --control --json scaling.json
    python reports/visit_scaling.py ROOT NAME --visits 64 --material-assist 0 0.3 --control
    python reports/visit_scaling.py ROOT NAME --visits 64 --leaf-material 0 0.3 --leaf-depth 8
    python reports/visit_scaling.py ROOT NAME --visits 64 --search c_puct_eval=2.0 --search fpu_reduction=0.4
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from pathlib import Path

DEFAULT_RUNGS = ("sf-n1-r30", "sf-n1-r10", "sf-n1", "sf-n300")


def _number(cast: type, low: float, high: float, bounds: str):  # noqa: ANN202 - an argparse type
    """An argparse type: a ``cast`` number in [low, high], refused with ``bounds`` naming the rule."""
    def parse(text: str) -> float:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if cast is int else 'a number'}: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{bounds}, got {value}")
        return value
    return parse


# policy-only play (no visits) is the campaign's own evaluation, so budgets start at 1
_visits = _number(int, 1, 10**9, "visits must be at least 1")
_weight = _number(float, 0.0, 1.0, "material assist weight must lie in [0, 1]")
_leaf_weight = _number(float, 0.0, 1.0, "leaf material weight must lie in [0, 1]")
_depth = _number(int, 0, 16, "leaf depth must lie in 0..16")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="project root of the campaign (holds runs/NAME and data/)")
    parser.add_argument("name", help="campaign name")
    parser.add_argument("--visits", type=_visits, nargs="+", default=[64, 256], help="visit budgets (default 64 256)")
    parser.add_argument("--rungs", nargs="+", default=list(DEFAULT_RUNGS),
                        help=f"ladder rungs to play (default {' '.join(DEFAULT_RUNGS)})")
    parser.add_argument("--openings", type=_visits, default=None,
                        help="opening pairs per match (default: the recipe's evaluate.openings)")
    parser.add_argument("--material-assist", type=_weight, nargs="+", default=[0.0],
                        help="leaf-value material blend weights to play each budget with (default 0)")
    parser.add_argument("--leaf-material", type=_leaf_weight, nargs="+", default=[0.0],
                        help="in-tree quiescent material blend weights to play each budget with (default 0)")
    parser.add_argument("--leaf-depth", type=_depth, default=8,
                        help="captures-only quiescence plies of --leaf-material (default 8; 0: static count)")
    parser.add_argument("--search", action="append", default=[], metavar="KEY=YAML",
                        help="change the evaluation search for this run only (a key of the recipe's search section)")
    parser.add_argument("--model", type=Path, help="ONNX artifact (default: the campaign's active artifact)")
    parser.add_argument("--control", action="store_true", help="also rate the run's untrained initial artifact")
    parser.add_argument("--out", type=Path, help="folder for the matches (default: runs/NAME/visit_scaling)")
    parser.add_argument("--json", type=Path, help="also write the ratings as JSON")
    return parser.parse_args(argv)


def arms(campaign, model: Path | None, control: bool) -> dict[str, Path]:  # noqa: ANN001 - a Campaign
    """The artifacts to rate by label: ``final`` and, with ``control``, ``control``."""
    state = campaign.states.load() if campaign.states.exists() else None
    final = model or (Path(state.active_artifact) if state is not None and state.active_artifact else None)
    if final is None:
        raise ValueError(f"campaign {campaign.name!r} has no active artifact yet; pass --model")
    found = {"final": final}
    if control:
        found["control"] = campaign.paths.dir / "artifacts" / "initial" / "int8.onnx"
    for label, path in found.items():
        if not path.is_file():
            raise ValueError(f"{label} artifact {path} does not exist")
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from chesszero.campaign.context import Campaign
    from chesszero.campaign.eval_stage import rate_model
    from chesszero.campaign.search_settings import evaluation_search, search_overrides
    from chesszero.config import ConfigError
    from chesszero.evaluate.ladder import LadderTable

    try:
        state_file = args.root / "runs" / args.name / "state.json"
        if not state_file.is_file():
            raise ValueError(f"{state_file} does not exist: not a campaign of {args.root}")
        preset = json.loads(state_file.read_text())["preset"]
        campaign = Campaign.open(args.root, args.name, preset=preset)
        changes = search_overrides(args.search)
        if changes:  # the campaign's own recipe and overrides, then this run's search changes
            from chesszero.config import load_config

            campaign.cfg = load_config(args.root / "params.yaml", preset=preset,
                                       overrides={**campaign.overrides, **changes})
            evaluation_search(campaign.cfg)  # a bad value stops here, before any game
        changed = re.sub(r"[^A-Za-z0-9_.=-]+", "",  # a file-name part: the changes, safe characters only
                         "".join(f"-{key.removeprefix('search.')}={value}" for key, value in changes.items()))
        ladder = LadderTable.load(args.root / "data" / "ladder.json")
        for rung in args.rungs:
            ladder.rating(rung)  # an unknown or uncalibrated rung stops here, before any game
        if args.openings is not None:
            ev = campaign.cfg.evaluate.model_copy(update={"openings": args.openings})
            campaign.cfg = campaign.cfg.model_copy(update={"evaluate": ev})
        out = args.out or campaign.paths.dir / "visit_scaling"
        results: list[dict[str, object]] = []
        for label, artifact in arms(campaign, args.model, args.control).items():
            for visits in args.visits:
                for weight, leaf in itertools.product(args.material_assist, args.leaf_material):
                    started = time.monotonic()
                    tag = (f"{label}-v{visits}{changed}" + (f"-m{weight:g}" if weight else "")
                           + (f"-q{leaf:g}d{args.leaf_depth}" if leaf else ""))
                    rated = rate_model(campaign, str(artifact), visits, out, tag, args.rungs,
                                       material_assist=weight, leaf_material=leaf, leaf_material_depth=args.leaf_depth)
                    joint = rated["joint"]
                    scores = ", ".join(f"{rung} {score:.3f}" for rung, score in rated["scores"].items())
                    assist = "".join(f", {key.removeprefix('search.')} {value}" for key, value in changes.items())
                    assist += (f", material assist {weight:g}" if weight else "") + (
                        f", leaf material {leaf:g} at depth {args.leaf_depth}" if leaf else "")
                    print(f"{label} at {visits} visits{assist}: {joint.describe()}; {scores} "
                          f"({time.monotonic() - started:.0f} s)", flush=True)
                    results.append({"arm": label, "artifact": str(artifact), "visits": visits,
                                    "search_changes": changes, "material_assist": weight, "leaf_material": leaf,
                                    "leaf_depth": args.leaf_depth, "scores": rated["scores"],
                                    "joint": joint.to_dict(), "seconds": round(time.monotonic() - started, 1)})
    except (ValueError, KeyError, FileNotFoundError, ConfigError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # KeyError's str() quotes it
        print(f"visit_scaling: {message}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps({"root": str(args.root), "name": args.name, "rungs": args.rungs,
                                         "openings": campaign.cfg.evaluate.openings, "results": results},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
