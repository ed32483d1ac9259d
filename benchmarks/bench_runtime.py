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

Targets (``targets.py``): INT8 at least 1.5x ONNX Runtime FP32 (issue 5),
at one thread at least 2x (issue 24); the fidelity figures within the gate's
default thresholds (issue 5). ``--quick`` shortens fitting, QAT and timing
(``QUICK``) for a smoke check; explicit options still win.

Network: ``--checkpoint`` when given; otherwise the ``--preset``'s size
(``cpu``: 6x64) fitted for ``--fit-steps`` steps to a synthetic task (a fixed
move preference and material-sign WDL).  A freshly initialised network has
an almost flat policy whose top-1 move is decided by near-ties, which makes
its agreement figure meaningless; the fitted one has peaked policies like a
trained network.  Real fidelity numbers need a real checkpoint.

Run: ``.venv/bin/python benchmarks/bench_runtime.py [--threads 1 2] [--quick] [--json reports/bench/runtime.json]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from common import Row, report
from rich.console import Console
from targets import target

from chesszero import core
from chesszero.config import ConfigError, load_config
from chesszero.model import ChessNet
from chesszero.publish.calibration import calibration_set_from_games, load_calibration_set
from chesszero.publish.fidelity import FidelityReport
from chesszero.publish.pipeline import PublishResult, PublishSettings, publish
from chesszero.publish.runtime import OrtRuntime, Session, TorchRuntime

CALIBRATION = Path("data/calibration/positions.jsonl")
QUICK = {"fit_steps": 40, "qat_steps": 2, "rounds": 2, "seconds": 0.3}
"""Reduced budgets of ``--quick`` (each applies only where the option was not given)."""
FULL = {"fit_steps": 200, "rounds": 5, "seconds": 1.0}


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
    parser.add_argument("--fit-steps", type=int, help="synthetic fitting steps (no checkpoint; 200)")
    parser.add_argument("--rounds", type=int, help="interleaved timing rounds (5)")
    parser.add_argument("--seconds", type=float, help="minimum time per measurement (1.0)")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--quick", action="store_true", help=f"reduced budgets {QUICK}")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)

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
        rows: list[Row] = []
        for threads in args.threads:
            sessions: dict[str, Session] = {
                "PyTorch eager FP32": TorchRuntime(threads=threads).build(result.fp32),
                "ONNX Runtime FP32": OrtRuntime(threads=threads).build(result.fp32),
                "ONNX Runtime INT8": OrtRuntime(threads=threads).build(result.int8),
            }
            rates = measure(sessions, planes, args.rounds, args.seconds)
            rows += runtime_rows(rates, threads)
    gate = result.gate.report
    fidelity = gate.to_dict() if gate is not None else {"error": result.gate.error}
    rows += fidelity_rows(gate, checkpoint=args.checkpoint is not None)
    rows += regression_rows(rows, previous_int8_ratios(args.json))
    load = os.getloadavg()
    report(f"{net.size.name} inference, batch {args.batch} ({origin})", rows, args.json,
           meta={"cpu_flags": cpu_flags(), "load_average": load, "network": origin, "batch": args.batch,
                 "int8_fidelity": fidelity})
    if gate is not None:
        t = gate.thresholds
        console.print(
            f"INT8 fidelity on {gate.positions} calibration positions: top-1 agreement "
            f"{gate.agreement:.4f} (>= {t.min_agreement}), legal KL {gate.kl_mean:.5f} "
            f"(<= {t.max_kl}), WDL MAE {gate.wdl_mae:.5f} (<= {t.max_wdl_mae}) -> "
            f"{'PASS' if gate.passed else 'FAIL: ' + '; '.join(gate.failures)}"
        )
    else:
        console.print(f"INT8 artifact could not be gated: {result.gate.error}")
    console.print(f"CPU: {cpu_flags()}; load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} "
                  f"on {os.cpu_count()} CPUs; publication took {publish_seconds:.0f}s "
                  f"(QAT {settings.qat.steps} steps at lr {settings.qat.lr:g})")


def runtime_rows(rates: dict[str, float], threads: int) -> list[Row]:
    """One thread setting's rows: torch FP32, ONNX Runtime FP32 against it, INT8 against ORT FP32."""
    torch_fp32, ort_fp32, int8 = (rates[k] for k in ("PyTorch eager FP32", "ONNX Runtime FP32", "ONNX Runtime INT8"))
    per = f"{threads} thread{'s' if threads > 1 else ''}"
    goal = target("int8-vs-fp32-1-thread" if threads == 1 else "int8-vs-fp32")
    return [
        Row(f"PyTorch eager FP32, {per}", torch_fp32, "positions/s", "reference", None, {"threads": threads}),
        Row(f"ONNX Runtime FP32, {per}", ort_fp32, "positions/s", f"PyTorch eager FP32, {per}",
            ort_fp32 / torch_fp32, {"threads": threads}),
        Row(f"ONNX Runtime INT8, {per}", int8, "positions/s", f"ONNX Runtime FP32, {per}", int8 / ort_fp32,
            {"threads": threads, "vs_torch_fp32": round(int8 / torch_fp32, 3)}, goal),
    ]


def previous_int8_ratios(path: Path | None) -> dict[int, tuple[float, str]]:
    """INT8 over ORT FP32 per thread count in the JSON a previous run left at
    `path` (or beside it as ``<name>.previous.json``, where ``run_all`` moves
    it), in this script's rows or the format before shared rows, with that
    run's date; empty when there is none."""
    if path is None:
        return {}
    kept = path.with_name(f"{path.stem}.previous.json")
    path = kept if kept.is_file() else path
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    when = str(data.get("run", {}).get("finished", "") if isinstance(data.get("run"), dict) else "")
    out: dict[int, tuple[float, str]] = {}
    for row in data.get("rows", []):
        name = str(row.get("name") or row.get("runtime") or "")
        if not name.startswith("ONNX Runtime INT8"):
            continue
        threads = row.get("extra", {}).get("threads", row.get("threads"))
        ratio = row.get("ratio", row.get("vs_ort_fp32"))
        if threads is not None and ratio:
            out[int(threads)] = (float(ratio), when or str(path))
    return out


def regression_rows(rows: Sequence[Row], previous: Mapping[int, tuple[float, str]]) -> list[Row]:
    """INT8 over FP32 now against the previous run's, per thread count: a drop
    of more than 10% is MISSED (issue 24: the regression showed only as a plain ratio)."""
    out = []
    for row in rows:
        threads = row.extra.get("threads") if row.name.startswith("ONNX Runtime INT8") else None
        if threads is None or row.ratio is None or int(threads) not in previous:
            continue
        before, when = previous[int(threads)]
        out.append(Row(f"INT8 over FP32 vs the previous run, {threads} thread{'s' if threads > 1 else ''}",
                       row.ratio, "x (INT8/FP32)", f"previous run {before:.2f}x ({when})", row.ratio / before,
                       {"threads": threads, "previous": before}, target("int8-no-regression")))
    return out


def fidelity_rows(gate: FidelityReport | None, *, checkpoint: bool) -> list[Row]:
    """The INT8 artifact's fidelity figures against the gate's targets (none if it was not gated)."""
    if gate is None:
        return []
    against = "source network" + ("" if checkpoint else " (fitted to a synthetic task)")
    extra = {"positions": gate.positions, "gate": "pass" if gate.passed else "FAIL"}
    return [
        Row("INT8 fidelity: top-1 legal agreement", gate.agreement, "share", against, None, extra,
            target("int8-agreement")),
        Row("INT8 fidelity: mean legal-policy KL", gate.kl_mean, "nats", against, None, extra, target("int8-kl")),
        Row("INT8 fidelity: WDL mean absolute error", gate.wdl_mae, "abs. error", against, None, extra,
            target("int8-wdl-mae")),
    ]


if __name__ == "__main__":
    main()
