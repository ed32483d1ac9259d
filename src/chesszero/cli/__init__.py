"""The `chesszero` command line. Each subcommand parses its arguments here
and calls into the package; no chess or learning logic lives in this file.

Subcommands: ``demo``, ``perft`` (native core), ``selfplay`` (one actor ->
a Parquet shard), ``train`` (one training quantum), ``publish`` (checkpoint
-> gated artifact), ``uci`` (play the network), ``ladder`` (delegates to
``chesszero.evaluate.ladder``), ``campaign``, ``grow`` (checkpoint -> larger
network, same outputs), ``web`` (play the model in a browser), ``study``
(failure studies, ``chesszero.studies``), ``distill`` (a compact student from a
teacher campaign, measured against it), ``nnue`` (the NNUE student of the alpha-beta
engine: ``build`` from a teacher campaign, ``eval``), ``bench`` (delegates to
``benchmarks/run_all.py`` of a source checkout).

Bad input (a ``ValueError`` or a missing file, and argument errors) is one
line on stderr and exit status 2, never a traceback.  Package imports happen
inside the handlers, so ``chesszero perft`` does not pay for torch.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from chesszero.cli import campaign as campaign_cli
from chesszero.cli import distill as distill_cli
from chesszero.cli import grow as grow_cli
from chesszero.cli import ladder as ladder_cli
from chesszero.cli import nnue as nnue_cli
from chesszero.cli import study as study_cli
from chesszero.cli import web as web_cli
from chesszero.cli.common import (
    UsageError,
    _load_recipe,
    _Parser,
    _recipe_arguments,
    add_backend_argument,
)

# ---------------------------------------------------------------- handlers


def _demo(args: argparse.Namespace) -> int:
    from chesszero.demo import run_demo

    run_demo(games=args.games, seed=args.seed)
    return 0


def _perft(args: argparse.Namespace) -> int:
    from chesszero import core

    game = core.Game(args.fen)
    print(game.perft(args.depth))
    return 0


def _key_int(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    try:
        if not sep or not key.isidentifier():
            raise ValueError
        return key, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KEY=INT, got {text!r}") from None


def _train(args: argparse.Namespace) -> int:
    from chesszero.train.run import train_command

    return train_command(params=args.params, preset=args.preset, overrides=args.set,
                         replay=args.replay, checkpoint=args.checkpoint,
                         stats_out=args.stats_out, steps=args.steps, generation=args.generation,
                         extra=dict(args.record), catch_up=args.catch_up)


def _publish(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from chesszero.publish import Precision, PublishSettings, load_calibration_set, publish
    from chesszero.publish.backends import make_runtime, publication_scheme

    cfg = _load_recipe(args)
    backend = args.backend or cfg.inference.backend.value
    runtime = make_runtime(backend, threads=None)  # checked before any work
    if not args.checkpoint.is_file():
        raise ValueError(f"checkpoint not found: {str(args.checkpoint)!r}")
    from chesszero.publish.calibration import random_play_set, tuning_set_from_replay

    calib = load_calibration_set(args.calibration, limit=cfg.publish.calibration_positions)
    n = cfg.publish.calibration_positions
    tune = (tuning_set_from_replay(args.tune_replay, limit=n, seed=args.seed) if args.tune_replay is not None
            else random_play_set(n, seed=args.seed))
    settings = PublishSettings.from_config(cfg.publish, precision=Precision(args.precision),
                                           scheme=publication_scheme(backend),
                                           moves_left=cfg.search.moves_left.enabled)
    with Console(stderr=True).status(f"publishing {args.checkpoint} -> {args.out} (gate: {runtime.name})"):
        result = publish(args.checkpoint, args.out, calib, settings=settings, runtime=runtime,
                         state_path=args.state, tune=tune)
    gate = result.gate
    print(json.dumps({
        "activated": result.activated,
        "artifact": str(gate.path),
        "backend": backend,
        "runtime": runtime.name,
        "tuned_on": tune.source,
        "fidelity": gate.report.summary() if gate.report else None,
        "failures": list(gate.report.failures) if gate.report else [],
        "error": gate.error,
    }, indent=2))
    if not result.activated:
        print("chesszero publish: the fidelity gate rejected the artifact", file=sys.stderr)
        return 1
    return 0


def _selfplay(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from chesszero.campaign.selfplay_stage import actor_settings, late_tail
    from chesszero.selfplay import SelfPlayActor
    from chesszero.uci.model import source_from_path, uniform_source

    cfg = _load_recipe(args)
    backend = args.backend or cfg.inference.backend.value
    source = source_from_path(args.model, backend) if args.model else uniform_source()
    evaluator = source.build(args.threads)
    visits = args.visits if args.visits is not None else cfg.search.visit_cap.at(args.generation)
    args.out.mkdir(parents=True, exist_ok=True)
    actor = SelfPlayActor(actor_settings(cfg, actor=0, seed=args.seed, archive_path=None))
    try:
        with Console(stderr=True).status(f"self-play: {args.games} games with {source.label}, "
                                         f"{visits} visits per move"):
            report = actor.play(evaluator, visits=visits, ply_cap=cfg.selfplay.ply_cap.at(args.generation),
                                model_id=source.label, generation=args.generation, games=args.games,
                                resign_threshold=args.resign_threshold,
                                late_tail=late_tail(cfg, args.generation),
                                shard_path=args.out / f"selfplay_{args.seed:04d}_g{args.games}.parquet")
    finally:
        actor.close()
    print(json.dumps({
        "shard": str(report.path) if report.path else None,
        "games": report.games,
        "positions": report.positions,
        "terminations": report.terminations,
        "non_decisive_rate": report.non_decisive_rate,
        "conversion": {"opportunities": report.conversion.opportunities,
                       "converted": report.conversion.converted, "rate": report.conversion.rate},
        "odds": {"games": report.odds.games, "decisive": report.odds.decisive,
                 "conversion": {"opportunities": report.odds.conversion.opportunities,
                                "converted": report.odds.conversion.converted,
                                "rate": report.odds.conversion.rate}},
        "random_opponent": {"games": report.random_opponent.games, "decisive": report.random_opponent.decisive,
                            "conversion": {"opportunities": report.random_opponent.conversion.opportunities,
                                           "converted": report.random_opponent.conversion.converted,
                                           "rate": report.random_opponent.conversion.rate}},
        "searches_per_s": report.searches_per_second,
        "seconds": report.seconds,
    }, indent=2))
    return 0


def _uci(args: argparse.Namespace) -> int:
    from chesszero.uci import run_uci

    if args.engine == "alphabeta":
        return _uci_alphabeta(args)
    if args.net is not None:
        raise UsageError("chesszero uci", "--net belongs to --engine alphabeta; the network engine takes --model")
    return run_uci(args.model, args.visits, args.threads, sys.stdin, sys.stdout,
                   parallel_leaves=args.parallel_leaves, seed=args.seed, backend=args.backend,
                   gumbel_root=args.root == "gumbel")


def _uci_alphabeta(args: argparse.Namespace) -> int:
    from chesszero.config import REPO_ROOT
    from chesszero.nnue.paths import latest_student
    from chesszero.uci.alphabeta import run_alphabeta_uci

    if args.model is not None:
        raise UsageError("chesszero uci", "--model belongs to the network engine; --engine alphabeta takes --net")
    net = args.net
    if net is None:
        newest = latest_student(REPO_ROOT)
        if newest is None:
            raise UsageError("chesszero uci", "no NNUE student under runs/nnue/: build one with "
                             "`chesszero nnue build --teacher-campaign NAME`, or pass --net FILE or --net control")
        net = str(newest)
    return run_alphabeta_uci(net, sys.stdin, sys.stdout, hash_mb=args.hash)


def _bench(argv: Sequence[str]) -> int:
    from chesszero.config import REPO_ROOT

    script = REPO_ROOT / "benchmarks" / "run_all.py"
    if not script.is_file():
        raise ValueError(f"{script} not found: `chesszero bench` runs from a source checkout")
    return int(runpy.run_path(str(script))["main"](list(argv)))


DELEGATED: dict[str, Callable[[Sequence[str]], int]] = {"bench": _bench}
"""Subcommands whose arguments belong to another parser (passed through verbatim)."""


# ------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="chesszero", description="AlphaZero-style chess self-play")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="tour of the native core (perft, random games, encoding)")
    demo.add_argument("--games", type=int, default=20)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_demo)

    perft = sub.add_parser("perft", help="count leaf nodes of the move tree")
    perft.add_argument("depth", type=int)
    perft.add_argument("--fen", default=None)
    perft.set_defaults(func=_perft)

    play = sub.add_parser(
        "selfplay", help="play self-play games with an ONNX model (or no network) into a Parquet shard",
        description="One actor with the recipe's search and self-play settings plays --games "
        "finished games and writes them as one schema-checked Parquet shard in --out.")
    _recipe_arguments(play)
    play.add_argument("--games", type=int, required=True, help="finished games to play")
    play.add_argument("--out", type=Path, required=True, help="folder for the shard")
    play.add_argument("--model", default=None, help="ONNX artifact (default: uniform evaluator)")
    play.add_argument("--visits", type=int, default=None,
                      help="visits per move (default: search.visit_cap at --generation)")
    play.add_argument("--generation", type=int, default=0,
                      help="generation whose visit and ply caps apply (default: 0)")
    play.add_argument("--resign-threshold", type=float, default=None, help="default: never resign")
    play.add_argument("--threads", type=int, default=1, help="inference threads")
    add_backend_argument(play, default=None)
    play.add_argument("--seed", type=int, default=0)
    play.set_defaults(func=_selfplay)

    train = sub.add_parser(
        "train", help="run one training quantum from a replay store, resuming a checkpoint",
        description="One quantum of train.steps_per_quantum optimizer steps, if the replay "
        "store's admitted rows fund it (exit 3 when not yet). With train.world_size > 1 the "
        "ranks are started with torchrun on this machine.")
    _recipe_arguments(train)
    train.add_argument("--replay", type=Path, required=True, help="replay store file")
    train.add_argument("--checkpoint", type=Path, required=True,
                       help="checkpoint to resume (when it exists) and write")
    train.add_argument("--stats-out", type=Path, default=None, help="write the quantum's statistics as JSON")
    train.add_argument("--steps", type=int, default=None, help="override train.steps_per_quantum")
    train.add_argument("--generation", type=int, default=None,
                       help="campaign generation to record in the checkpoint")
    train.add_argument("--record", type=_key_int, action="append", default=[], metavar="KEY=INT",
                       help="campaign bookkeeping to record in the checkpoint (repeatable)")
    train.add_argument("--catch-up", action="store_true",
                       help="a candidate's quantum: run without replay funding, counted as catch-up credit")
    train.set_defaults(func=_train)

    pub = sub.add_parser(
        "publish", help="checkpoint -> INT8/FP32 ONNX artifact, activated only if the fidelity gate passes",
        description="Exit 0 when the artifact passed the gate and was activated, 1 when rejected.")
    _recipe_arguments(pub)
    pub.add_argument("--checkpoint", type=Path, required=True, help="training checkpoint")
    pub.add_argument("--out", type=Path, required=True, help="artifact directory to write")
    pub.add_argument("--state", type=Path, default=None,
                     help="activation state file to update on success (e.g. artifacts/active.json)")
    pub.add_argument("--precision", choices=["int8", "fp32"], default="int8",
                     help="artifact gated and activated (default: int8)")
    pub.add_argument("--calibration", type=Path, default=Path("data/calibration/positions.jsonl"),
                     help="the fidelity gate's positions (default: data/calibration/positions.jsonl)")
    pub.add_argument("--tune-replay", type=Path, default=None,
                     help="replay store whose rows set activation ranges and QAT "
                     "(default: seeded random-play positions; never the gate's)")
    pub.add_argument("--seed", type=int, default=0, help="seed of the tuning positions")
    add_backend_argument(pub, default=None)
    pub.set_defaults(func=_publish)

    uci = sub.add_parser("uci", help="a UCI engine on stdin/stdout")
    uci.add_argument("--model", default=None, help="ONNX artifact (default: uniform evaluator)")
    uci.add_argument("--visits", type=int, default=800, help="visit cap per move (0: none)")
    uci.add_argument("--threads", type=int, default=1, help="inference threads")
    uci.add_argument("--parallel-leaves", type=int, default=None, help="in-flight leaves per tree")
    uci.add_argument("--root", choices=("puct", "gumbel"), default="puct",
                     help="root rule (SPEC 6; the GumbelRoot option too)")
    add_backend_argument(uci, default="ort-cpu")
    uci.add_argument("--seed", type=int, default=0)
    uci.add_argument("--engine", choices=("network", "alphabeta"), default="network",
                     help="network: the self-play network's tree search (default); alphabeta: the "
                     "second engine, an NNUE student searched by alpha-beta (docs/nnue.md)")
    uci.add_argument("--net", default=None,
                     help="alphabeta only: .nnue file, or 'control' for material + piece-square "
                     "tables (default: the newest student under runs/nnue/)")
    uci.add_argument("--hash", type=int, default=16, help="alphabeta only: transposition table MB")
    uci.set_defaults(func=_uci)

    ladder_cli.add_parser(sub)
    campaign_cli.add_parser(sub)
    grow_cli.add_parser(sub)
    web_cli.add_parser(sub)
    study_cli.add_parser(sub)
    distill_cli.add_parser(sub)
    nnue_cli.add_parser(sub)
    # Delegated: everything after the command name goes to the benchmark runner's parser.
    sub.add_parser("bench", add_help=False,
                   help="run every benchmark, write reports/bench (chesszero bench --help)")

    return parser


def _error(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    prog = parser.prog
    try:
        if argv and argv[0] in DELEGATED:
            prog = f"{parser.prog} {argv[0]}"
            try:
                return DELEGATED[argv[0]](argv[1:])
            except SystemExit as done:  # the owner's argparse already printed its message
                return done.code if isinstance(done.code, int) else int(done.code is not None)
        args = parser.parse_args(argv)
        prog = " ".join([parser.prog, args.command, *[c for c in (getattr(args, "ladder_command", None),
                                                                    getattr(args, "campaign_command", None)) if c]])
        return int(args.func(args))
    except UsageError as exc:
        return _error(exc.prog, str(exc))
    except (ValueError, FileNotFoundError) as exc:  # bad input: one clear line, no traceback
        return _error(prog, str(exc))


if __name__ == "__main__":
    sys.exit(main())
