"""Mate recall and target agreement of a campaign's networks on its own replay positions.

Among the searched positions of generations FIRST..LAST that hold a mate in
one, how often the stored search target and the network's top legal move
mate, and the policy mass on the mating moves; on a seeded sample of all
those positions (``--sample``, 0.15), how often the network's top legal move
is the stored target's top move; among the positions where some legal move
stalemates, how often the target's and the network's top moves stalemate and
their mean weight on those moves. For the run's final artifact
(or ``--model``) and, as the control, its untrained ``initial`` artifact
(docs/learning.md uses it to tell a network that never reaches mates from
one that underfits them). Usage::

    python reports/mate_recall.py runs/<name> 30 39
    python reports/mate_recall.py runs/<name> 30 39 --model runs/<name>/artifacts/gen_0039/int8.onnx --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="campaign run folder (holds shards/ and artifacts/)")
    parser.add_argument("first", type=int, help="first generation of shards to scan")
    parser.add_argument("last", type=int, help="last generation of shards to scan")
    parser.add_argument("--model", type=Path, help="ONNX file to score (default: the newest artifact up to LAST)")
    parser.add_argument("--no-control", action="store_true", help="skip the run's initial (untrained) artifact")
    parser.add_argument("--sample", type=float, default=0.15,
                        help="share of searched positions scored for target agreement (0 skips it)")
    parser.add_argument("--seed", type=int, default=0, help="seed of that sample")
    parser.add_argument("--json", type=Path, help="also write the counts as JSON")
    args = parser.parse_args(argv)

    from chesszero.evaluate.mate_recall import (
        Agreement,
        MateRecall,
        StalemateRisk,
        latest_artifact,
        onnx_policy,
        own_target_fit,
        scan_replay,
        shard_paths,
    )

    try:
        scan = scan_replay(shard_paths(args.run, args.first, args.last), sample_fraction=args.sample,
                           seed=args.seed)
        arms = {"final": args.model or latest_artifact(args.run, args.last)}
        if not args.no_control:
            arms["control"] = args.run / "artifacts" / "initial" / "int8.onnx"
        results = {}
        for arm, model in arms.items():
            results[arm] = own_target_fit(scan, onnx_policy(model))
            recall = MateRecall(**results[arm]["mate_recall"])
            agreement = Agreement(**results[arm]["target_agreement"])
            risk = StalemateRisk(**results[arm]["stalemate_risk"])
            print(f"{arm} ({model}):\n  {recall.line()}\n  {agreement.line()}\n  {risk.line()}")
    except ValueError as exc:
        print(f"mate_recall: {exc}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps({
            "run": str(args.run), "generations": [args.first, args.last],
            "models": {arm: str(m) for arm, m in arms.items()},
            "sample": args.sample, "seed": args.seed, **results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
