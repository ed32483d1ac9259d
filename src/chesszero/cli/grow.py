"""``chesszero grow``: a training checkpoint's network grown to a larger size,
same outputs (``chesszero.train.grow_checkpoint`` over ``chesszero.model.grow``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "grow", help="grow a checkpoint's network to a larger BxC size with the same outputs",
        description="Net2Net growth: new blocks start as identities, widened layers copy units and "
        "split their outgoing weights. The grown checkpoint keeps the step, RNG and extra state "
        "(sampler, credit ledger); the optimizer restarts without momentum. Train it with "
        "--set model.size=BxC (and model.se_ratio=R for a gated BxC-seR network, "
        "model.attack_planes=true for a BxC-at one).")
    p.add_argument("--checkpoint", type=Path, required=True, help="training checkpoint to grow")
    p.add_argument("--size", required=True, help="target size BxC, no smaller in either dimension "
                   "(BxC-seR when the source is gated: the same ratio R)")
    p.add_argument("--out", type=Path, required=True, help="grown checkpoint to write")
    p.add_argument("--seed", type=int, default=0, help="which units are copied and how weights split")
    p.set_defaults(func=_grow)


def _grow(args: argparse.Namespace) -> int:
    from chesszero.config.sizes import parse_size
    from chesszero.train.checkpoint import grow_checkpoint, load_checkpoint, save_checkpoint

    size = parse_size(args.size)
    if not args.checkpoint.is_file():
        raise ValueError(f"checkpoint not found: {str(args.checkpoint)!r}")
    source = load_checkpoint(args.checkpoint)
    grown = grow_checkpoint(source, size, seed=args.seed)
    save_checkpoint(args.out, grown)
    print(json.dumps({"checkpoint": str(args.out), "from": source.model_size, "size": grown.model_size,
                      "step": grown.step}, indent=2))
    return 0
