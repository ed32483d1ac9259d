"""Squeeze-and-excitation or attack planes: what a network variant costs at inference (issue 22).

For every network size the ``--preset`` trains (``cpu``: 4x48, then 6x64;
or ``--sizes``), a plain network and its twin -- gated (``BxC-se<ratio>``,
``--ratio`` 4; the default ``--twin se``) or with the attacked-square input
planes (``BxC-at``, ``--twin at``) -- are fitted to the same synthetic task for the same steps
(``bench_runtime.fitted_network``), published through the real pipeline
(fold -> INT8 calibration and QAT -> ONNX -> gate), and their INT8
artifacts timed on ONNX Runtime in interleaved rounds at batch ``--batch``
(256) and at the preset's self-play batch (``selfplay.batch_size``: 4 for
``cpu``, where each extra graph node costs most; ``--selfplay-batch``), for
each ``--threads`` setting; their FP32 exports too, for the float cost.

Rows: each twin's positions/s as a ratio to the plain network's, measured
in the same rounds. Targets (``targets.py``, ``se-inference-cost`` and
``attack-inference-cost``): the twin's INT8 network keeps at least 0.8x the
plain one's rate, the bound under which docs/learning.md would try it in a
learning ablation; the twin's fidelity figures against the gate's
thresholds. A learning gain is measured by ``bench_learning`` (``--set
model.se_ratio=4`` or ``--set model.attack_planes=true``), not here.

Run: ``.venv/bin/python benchmarks/bench_se.py [--twin at] [--quick] [--json reports/bench/se.json]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

import torch
from bench_runtime import (
    CALIBRATION,
    QUICK,
    cpu_flags,
    fidelity_rows,
    fitted_network,
    measure,
    parse_timing_args,
    random_games,
    size_name,
)
from common import Row, report
from rich.console import Console
from targets import target

from chesszero import core
from chesszero.config import ConfigError, load_config
from chesszero.config.sizes import parse_size
from chesszero.publish.calibration import calibration_set_from_games, load_calibration_set
from chesszero.publish.pipeline import PublishSettings, publish
from chesszero.publish.runtime import OrtRuntime, Session


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n > 1 else ''}"


TWINS = {"se": "se-inference-cost", "at": "attack-inference-cost"}
"""``--twin`` choices and the target each one's INT8 row is held to."""


def pair_rows(rates: dict[str, float], plain: str, twin: str, threads: int, batch: int,
              goal_name: str = TWINS["se"]) -> list[Row]:
    """The twin's rates against the plain network's, INT8 and FP32, at one thread setting and batch."""
    rows = []
    for precision, goal in (("INT8", target(goal_name)), ("FP32", None)):
        where = f"ONNX Runtime {precision}, batch {batch}, {_threads(threads)}"
        reference = f"{where}, {plain}"
        ours = rates[f"{precision} {twin}"]
        meta = {"threads": threads, "batch": batch, "precision": precision}
        rows += [
            Row(reference, rates[f"{precision} {plain}"], "positions/s", "reference", None, {**meta, "size": plain}),
            Row(f"{where}, {twin}", ours, "positions/s", reference, ours / rates[f"{precision} {plain}"],
                {**meta, "size": twin}, goal),
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu", help="params.yaml preset (network sizes, QAT, thresholds)")
    parser.add_argument("--sizes", nargs="+", type=size_name, help="plain network sizes (default: the preset's)")
    parser.add_argument("--twin", choices=sorted(TWINS), default="se",
                        help="se: squeeze-and-excitation twins (BxC-seR); at: attack-plane twins (BxC-at)")
    parser.add_argument("--ratio", type=int, default=4, help="squeeze-and-excitation ratio of the twins (C / hidden)")
    parser.add_argument("--selfplay-batch", type=int,
                        help="a second batch to time at (default: the preset's selfplay.batch_size, 4 for cpu)")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--quick", action="store_true", help=f"reduced budgets {QUICK}")
    args = parse_timing_args(parser)
    console = Console()
    try:
        config = load_config("params.yaml", preset=args.preset)
        settings = PublishSettings.from_config(config.publish)
        sizes = [size.with_se(0).with_attacks(False).name for size in config.network_sizes()]
        selfplay_batch = config.selfplay.batch_size
    except ConfigError as error:
        console.print(f"[yellow]params.yaml does not load ({error}); using 6x64 and default settings[/yellow]")
        sizes, settings, selfplay_batch = ["6x64"], PublishSettings(), 4
    batches = sorted({args.batch, selfplay_batch if args.selfplay_batch is None else args.selfplay_batch}, reverse=True)
    if min(batches) < 1:
        parser.error(f"batches must be >= 1, got {batches}")
    sizes = [parse_size(s).with_se(0).with_attacks(False).name for s in (args.sizes or sizes)]
    try:
        twins = [(size, (parse_size(size).with_se(args.ratio) if args.twin == "se"
                         else parse_size(size).with_attacks(True)).name) for size in sizes]
    except ValueError as error:
        parser.error(f"--ratio {args.ratio}: {error}")
    if args.qat_steps is not None:
        settings = dataclasses.replace(settings, qat=dataclasses.replace(settings.qat, steps=args.qat_steps))
    torch.set_num_threads(1)
    if CALIBRATION.exists():
        calib = load_calibration_set(CALIBRATION)
    else:
        calib = calibration_set_from_games(random_games(516, 0), source="random play (no calibration file)")
    planes = {batch: core.encode_batch(random_games(batch, 99)) for batch in batches}
    rows: list[Row] = []
    for plain, twin in twins:
        with tempfile.TemporaryDirectory() as tmp:
            results = {}
            for size in (plain, twin):
                net = fitted_network(size, args.fit_steps)
                results[size] = publish(net, Path(tmp) / size, calib, settings=settings,
                                        runtime=OrtRuntime(threads=max(args.threads)))
            for batch in batches:
                for threads in args.threads:
                    sessions: dict[str, Session] = {}
                    for size, result in results.items():
                        sessions[f"INT8 {size}"] = OrtRuntime(threads=threads).build(result.int8)
                        sessions[f"FP32 {size}"] = OrtRuntime(threads=threads).build(result.fp32)
                    rates = measure(sessions, planes[batch], args.rounds, args.seconds)
                    rows += pair_rows(rates, plain, twin, threads, batch, TWINS[args.twin])
            gate = results[twin].gate
            rows += fidelity_rows(gate.report, twin, checkpoint=False)
            if gate.report is None:
                console.print(f"[red]{twin}: not gated ({gate.error})[/red]")
    load = os.getloadavg()
    what = f"Squeeze-and-excitation, ratio {args.ratio}," if args.twin == "se" else "Attack planes:"
    report(f"{what} inference cost, batches {', '.join(map(str, batches))} "
           f"(networks fitted {args.fit_steps} steps to a synthetic task)", rows, args.json,
           meta={"cpu_flags": cpu_flags(), "load_average": load, "pairs": twins, "batches": batches,
                 "twin": args.twin, **({"ratio": args.ratio} if args.twin == "se" else {})})
    console.print(f"CPU: {cpu_flags()}; load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} "
                  f"on {os.cpu_count()} CPUs; QAT {settings.qat.steps} steps")


if __name__ == "__main__":
    main()
