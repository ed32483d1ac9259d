"""Inference runtimes: positions/s of the published network at self-play batch size.

Publishes one network through the real pipeline (fold -> INT8 calibration
and QAT -> ONNX -> gate) and measures, at batch ``--batch`` (256):

- PyTorch eager FP32 (the folded deployment network),
- ONNX Runtime FP32 (``fp32.onnx``),
- ONNX Runtime INT8 (``int8.onnx``, the gated artifact),

for each ``--threads`` setting, in interleaved rounds (best round counts; the
development machines are shared, so the load average is printed too), plus
the INT8 artifact's fidelity against the source network on the calibration
set (top-1 legal agreement, legal-policy KL, WDL MAE, gate verdict).

Network: ``--checkpoint`` when given; otherwise the ``--preset``'s size
(``cpu``: 6x64) fitted for ``--fit-steps`` steps to a synthetic task (a fixed
move preference and material-sign WDL).  A freshly initialised network has
an almost flat policy whose top-1 move is decided by near-ties, which makes
its agreement figure meaningless; the fitted one has peaked policies like a
trained network.  Real fidelity numbers need a real checkpoint.

Run: ``.venv/bin/python benchmarks/bench_runtime.py [--threads 1 2] [--json reports/bench/runtime.json]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from common import machine
from rich.console import Console
from rich.table import Table

from chesszero import core
from chesszero.config import ConfigError, load_config
from chesszero.model import ChessNet
from chesszero.publish.calibration import calibration_set_from_games, load_calibration_set
from chesszero.publish.pipeline import PublishResult, PublishSettings, publish
from chesszero.publish.runtime import OrtRuntime, Session, TorchRuntime

CALIBRATION = Path("data/calibration/positions.jsonl")


def random_games(n: int, seed: int) -> list[core.Game]:
    rng = random.Random(seed)
    games: list[core.Game] = []
    while len(games) < n:
        game = core.Game()
        for _ in range(rng.randint(0, 80)):
            moves = game.legal_actions()
            if len(moves) == 0 or game.outcome() is not None:
                break
            game.push_action(int(rng.choice(list(moves))))
        if game.outcome() is None and len(game.legal_actions()) > 0:
            games.append(game)
    return games


def fitted_network(size: str, steps: int, seed: int = 0) -> ChessNet:
    """A network fitted to a synthetic task (see the module docstring)."""
    torch.manual_seed(seed)
    net = ChessNet(size).train()
    games = random_games(1024, seed + 1)
    planes = torch.from_numpy(core.encode_batch(games))
    legal = torch.from_numpy(np.stack([g.legal_mask() for g in games]))
    gen = torch.Generator().manual_seed(seed)
    preference = torch.randn(core.NUM_ACTIONS, generator=gen)
    target = torch.where(legal, preference, torch.tensor(-1e9)).argmax(dim=1)
    ahead = planes[:, 40:46, 0, 0].sum(dim=1)
    wdl_target = torch.where(ahead > 0, 0, torch.where(ahead < 0, 2, 1))
    optimizer = torch.optim.Adam(net.parameters(), lr=2e-3)
    for _ in range(steps):
        index = torch.randint(0, len(planes), (64,), generator=gen)
        out = net(planes[index])
        loss = torch.nn.functional.cross_entropy(out.policy.masked_fill(~legal[index], -1e9), target[index])
        loss = loss + torch.nn.functional.cross_entropy(out.wdl, wdl_target[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return net.eval()


def measure(sessions: dict[str, Session], planes: np.ndarray, rounds: int, seconds: float) -> dict[str, float]:
    """Best positions/s per session over interleaved rounds of at least ``seconds`` each."""
    best = dict.fromkeys(sessions, 0.0)
    for session in sessions.values():
        session.evaluate(planes)  # warm-up
    for _ in range(rounds):
        for name, session in sessions.items():
            done, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds or done == 0:
                session.evaluate(planes)
                done += len(planes)
            best[name] = max(best[name], done / elapsed)
    return best


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return ", ".join(f for f in wanted if f" {f} " in f"{flags} ") or "no avx2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu", help="params.yaml preset (network size, QAT, thresholds)")
    parser.add_argument("--checkpoint", type=Path, help="publish this training checkpoint instead")
    parser.add_argument("--batch", type=int, default=256, help="positions per evaluation (self-play batch)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="intra-op thread counts")
    parser.add_argument("--qat-steps", type=int, help="override the preset's publish.qat_steps")
    parser.add_argument("--qat-lr", type=float, help="override the preset's publish.qat_lr (Adam)")
    parser.add_argument("--fit-steps", type=int, default=200, help="synthetic fitting steps (no checkpoint)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="minimum time per measurement")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    args = parser.parse_args()

    console = Console()
    try:
        publish_cfg = load_config("params.yaml", preset=args.preset).publish
        size = load_config("params.yaml", preset=args.preset).model.size
        settings = PublishSettings.from_config(publish_cfg)
    except ConfigError as error:
        console.print(f"[yellow]params.yaml does not load ({error}); using 6x64 and default "
                      "publication settings[/yellow]")
        size, settings = "6x64", PublishSettings()
    if args.qat_steps is not None:
        settings = dataclasses.replace(settings, qat=dataclasses.replace(settings.qat, steps=args.qat_steps))
    if args.qat_lr is not None:
        settings = dataclasses.replace(settings, qat=dataclasses.replace(settings.qat, lr=args.qat_lr))
    torch.set_num_threads(1)  # fitting and QAT use small batches: one thread is fastest here
    if CALIBRATION.exists():
        calib = load_calibration_set(CALIBRATION)
    else:
        calib = calibration_set_from_games(random_games(516, 0), source="random play (no calibration file)")
    started = time.perf_counter()
    if args.checkpoint is not None:
        from chesszero.train.checkpoint import load_model

        net, origin = load_model(args.checkpoint), str(args.checkpoint)
    else:
        net = fitted_network(size, args.fit_steps)
        origin = f"{size} fitted {args.fit_steps} steps to a synthetic task (no checkpoint)"
    with tempfile.TemporaryDirectory() as tmp:
        result: PublishResult = publish(net, Path(tmp) / "artifact", calib, settings=settings,
                                        runtime=OrtRuntime(threads=max(args.threads)))
        publish_seconds = time.perf_counter() - started
        planes = core.encode_batch(random_games(args.batch, 99))
        rows = []
        for threads in args.threads:
            sessions: dict[str, Session] = {
                "PyTorch eager FP32": TorchRuntime(threads=threads).build(result.fp32),
                "ONNX Runtime FP32": OrtRuntime(threads=threads).build(result.fp32),
                "ONNX Runtime INT8": OrtRuntime(threads=threads).build(result.int8),
            }
            rates = measure(sessions, planes, args.rounds, args.seconds)
            for name, rate in rates.items():
                rows.append({"runtime": name, "threads": threads, "positions_per_s": rate,
                             "vs_ort_fp32": rate / rates["ONNX Runtime FP32"],
                             "vs_torch_fp32": rate / rates["PyTorch eager FP32"]})
    report = result.gate.report
    fidelity = report.to_dict() if report is not None else {"error": result.gate.error}

    table = Table(title=f"{net.size.name} inference, batch {args.batch} ({origin})")
    for col in ("runtime", "threads", "positions/s", "vs ORT FP32", "vs torch FP32"):
        table.add_column(col, justify="left" if col == "runtime" else "right")
    for r in rows:
        table.add_row(r["runtime"], str(r["threads"]), f"{r['positions_per_s']:,.0f}",
                      f"{r['vs_ort_fp32']:.2f}x", f"{r['vs_torch_fp32']:.2f}x")
    console.print(table)
    if report is not None:
        t = report.thresholds
        console.print(
            f"INT8 fidelity on {report.positions} calibration positions: top-1 agreement "
            f"{report.agreement:.4f} (>= {t.min_agreement}), legal KL {report.kl_mean:.5f} "
            f"(<= {t.max_kl}), WDL MAE {report.wdl_mae:.5f} (<= {t.max_wdl_mae}) -> "
            f"{'PASS' if report.passed else 'FAIL: ' + '; '.join(report.failures)}"
        )
    else:
        console.print(f"INT8 artifact could not be gated: {result.gate.error}")
    load = os.getloadavg()
    console.print(f"CPU: {cpu_flags()}; load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} "
                  f"on {os.cpu_count()} CPUs; publication took {publish_seconds:.0f}s "
                  f"(QAT {settings.qat.steps} steps at lr {settings.qat.lr:g})")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "title": "inference runtimes", "machine": machine(), "cpu_flags": cpu_flags(),
            "load_average": load, "network": origin, "batch": args.batch, "rows": rows,
            "int8_fidelity": fidelity,
        }, indent=2))


if __name__ == "__main__":
    main()
