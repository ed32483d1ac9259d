"""Fit probe: train a fresh network on a campaign's own replay rows and print its fit curve.

The searched rows of generations FIRST..LAST-1 train it; generation LAST is
held out. The recipe (``--preset``, ``--set``) gives the optimizer, LR
schedule, batch, loss weights and reflection (``chesszero.evaluate.fit_probe``).
docs/learning.md compared SGD and AdamW this way. Usage::

    python reports/fit_probe.py runs/<name> 20 39 --size 6x64 --steps 1500
    python reports/fit_probe.py runs/<name> 20 39 --set train.optimizer=adamw \\
        --set "train.lr=[[0, 0.0], [100, 0.001], [5000, 0.0002]]" --json adamw.json
    python reports/fit_probe.py runs/<name> 20 39 --endings --set train.loss_weights.stalemate_rows=8
    python reports/fit_probe.py runs/<name> 10 39 --set "replay.value_blend=[[0, 0.9]]" --onnx q90.onnx

``--onnx PATH`` writes the trained network (float ONNX) for
``reports/value_probe.py --model``: value targets compared by what the value
head learns. ``--endings`` adds, at each point, how often the network's top move mates
where a mate in one is on the board and stalemates where a stalemating move
is, on the training generations and on the held-out one.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path


def _count(minimum: int):
    """An argparse type: an integer of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    return parse


def _size(text: str) -> str:
    """An argparse type: a network size the model accepts (checked before any shard is read)."""
    from chesszero.config.sizes import parse_size

    try:
        return parse_size(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _share(value: float | None, n: int) -> str:
    return f"- of {n}" if value is None else f"{value:.0%} of {n}"


def _endings(e) -> str:
    return f"{_share(e.mate_top, e.mate_positions)} / {_share(e.stalemate_top, e.stalemate_positions)}"


def _export(model, path: Path) -> None:  # noqa: ANN001 - a ChessNet
    """The trained network as a float ONNX file (no provenance: a probe's network, never published)."""
    from chesszero.publish import Provenance, export_onnx, fold_network

    export_onnx(fold_network(model), path, Provenance("", "", 0))
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="campaign run folder (holds shards/)")
    parser.add_argument("first", type=int, help="first generation of rows")
    parser.add_argument("last", type=int, help="last generation: held out, never trained on")
    parser.add_argument("--size", type=_size, default="6x64",
                        help="network size trained from scratch (default 6x64)")
    parser.add_argument("--steps", type=_count(0), default=1500, help="optimizer steps (default 1500)")
    parser.add_argument("--every", type=_count(1), default=500, help="score every this many steps (default 500)")
    parser.add_argument("--score-rows", type=_count(1), default=4000, help="rows scored per set (default 4000)")
    parser.add_argument("--preset", default="cpu", help="recipe preset of params.yaml (default cpu)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override")
    parser.add_argument("--threads", type=_count(1), default=1, help="torch threads (default 1)")
    parser.add_argument("--endings", action="store_true",
                        help="also score the top move where a mate in one or a stalemating move is on the "
                             "board (replays the shards once more)")
    parser.add_argument("--json", type=Path, help="also write the curve as JSON")
    parser.add_argument("--onnx", type=Path, help="also write the trained network as a float ONNX file")
    args = parser.parse_args(argv)

    import torch
    from rich.progress import Progress

    from chesszero.config import ConfigError, load_config, parse_overrides
    from chesszero.evaluate.fit_probe import ending_scans, fit_curve, held_out_split, run_rows

    torch.set_num_threads(args.threads)
    try:
        cfg = load_config(preset=args.preset, overrides=parse_overrides(args.set))
        rows = run_rows(args.run, args.first, args.last, cfg.replay)
        train, held = held_out_split(rows, args.last)
        print(f"{len(train)} training rows (generations {args.first}..{args.last - 1}), "
              f"{len(held)} held out (generation {args.last}); {args.size}, "
              f"{cfg.train.optimizer.value}, batch {cfg.train.global_batch}")
        print(f"{'step':>6} {'s':>6} | {'train: policy':>13} {'value':>6} {'top-1':>6} | "
              f"{'held out: policy':>16} {'value':>6} {'top-1':>6}")
        endings = ending_scans(args.run, args.first, args.last) if args.endings else None
        with Progress(transient=True) as progress:
            task = progress.add_task("training", total=args.steps)

            def show(p) -> None:
                progress.console.print(
                    f"{p.step:>6} {p.seconds:>6.0f} | {p.train.policy_loss:>13.3f} {p.train.value_loss:>6.3f} "
                    f"{p.train.top1:>6.1%} | {p.held_out.policy_loss:>16.3f} {p.held_out.value_loss:>6.3f} "
                    f"{p.held_out.top1:>6.1%}")
                if p.train_endings is not None:
                    progress.console.print(f"{'':>15}top move mates / stalemates: train {_endings(p.train_endings)}"
                                           f" | held out {_endings(p.held_out_endings)}")

            points = fit_curve(
                train, held, cfg.train, args.size, steps=args.steps, every=args.every,
                score_rows=args.score_rows, endings=endings,
                on_step=lambda k: progress.update(task, completed=k), on_point=show,
                on_done=None if args.onnx is None else lambda model: _export(model, args.onnx))
    except (ConfigError, ValueError) as exc:
        print(f"fit_probe: {exc}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps({
            "run": str(args.run), "generations": [args.first, args.last], "size": args.size,
            "preset": args.preset, "overrides": args.set, "points": [asdict(p) for p in points]},
            indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
