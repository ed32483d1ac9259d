"""Inference runtimes: positions/s of the published network at self-play batch size.

Publishes each network through the real pipeline (fold -> INT8 calibration
and QAT -> ONNX -> gate) twice -- SPEC 9's split (the start block in float)
and with ``publish.int8_stem`` (rows marked "INT8 stem") -- and measures, at
batch ``--batch`` (256):

- PyTorch eager FP32 (the folded deployment network; once per network),
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

Networks: ``--checkpoint`` when given; otherwise every size the
``--preset`` trains (``model.size`` and its ``progressive.stages``; ``cpu``:
4x48, then 6x64; or ``--sizes``), each fitted for ``--fit-steps`` steps to a
synthetic task (a fixed move preference and material-sign WDL).  A freshly initialised network has
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
from chesszero.config.sizes import parse_size
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


def parse_timing_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Adds the options every publish-and-time benchmark shares (batch, threads,
    budgets), parses, and fills unset budgets from ``QUICK`` or ``FULL`` (the
    caller adds ``--json`` and ``--quick`` itself: ``run_all`` reads them
    from each script's source)."""
    parser.add_argument("--batch", type=int, default=256, help="positions per evaluation (self-play batch)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="intra-op thread counts")
    parser.add_argument("--qat-steps", type=int, help="override the preset's publish.qat_steps")
    parser.add_argument("--fit-steps", type=int, help="synthetic fitting steps (no checkpoint; 200)")
    parser.add_argument("--rounds", type=int, help="interleaved timing rounds (5)")
    parser.add_argument("--seconds", type=float, help="minimum time per measurement (1.0)")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return ", ".join(f for f in wanted if f" {f} " in f"{flags} ") or "no avx2"


def size_name(text: str) -> str:
    """An argparse type: a network size such as ``6x64`` (a bad one is a usage error naming it)."""
    try:
        return parse_size(text).name
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu", help="params.yaml preset (network size, QAT, thresholds)")
    parser.add_argument("--checkpoint", type=Path, help="publish this training checkpoint instead")
    parser.add_argument("--sizes", nargs="+", type=size_name, help="network sizes to fit and measure (default: the "
                        "preset's model.size and its progressive.stages)")
    parser.add_argument("--qat-lr", type=float, help="override the preset's publish.qat_lr (Adam)")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--quick", action="store_true", help=f"reduced budgets {QUICK}")
    args = parse_timing_args(parser)

    console = Console()
    try:
        config = load_config("params.yaml", preset=args.preset)
        settings = PublishSettings.from_config(config.publish)
        sizes = [size.name for size in config.network_sizes()]  # with model.se_ratio
    except ConfigError as error:
        console.print(f"[yellow]params.yaml does not load ({error}); using 6x64 and default "
                      "publication settings[/yellow]")
        sizes, settings = ["6x64"], PublishSettings()
    if args.sizes:
        sizes = args.sizes
    if args.qat_steps is not None:
        settings = dataclasses.replace(settings, qat=dataclasses.replace(settings.qat, steps=args.qat_steps))
    if args.qat_lr is not None:
        settings = dataclasses.replace(settings, qat=dataclasses.replace(settings.qat, lr=args.qat_lr))
    torch.set_num_threads(1)  # fitting and QAT use small batches: one thread is fastest here
    if CALIBRATION.exists():
        calib = load_calibration_set(CALIBRATION)
    else:
        calib = calibration_set_from_games(random_games(516, 0), source="random play (no calibration file)")
    planes = core.encode_batch(random_games(args.batch, 99))
    networks: list[tuple[ChessNet, str]]
    if args.checkpoint is not None:
        from chesszero.train.checkpoint import load_model

        networks = [(load_model(args.checkpoint), str(args.checkpoint))]
    else:
        networks = [(fitted_network(size, args.fit_steps),
                     f"{size} fitted {args.fit_steps} steps to a synthetic task (no checkpoint)") for size in sizes]
    rows: list[Row] = []
    fidelity: dict[str, dict] = {}
    notes: list[str] = []
    for net, _ in networks:
        for int8_stem in (False, True):
            size, variant = net.size.name, dataclasses.replace(settings, int8_stem=int8_stem)
            label = f"{size}{STEM_LABEL[int8_stem]}"
            started = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                result: PublishResult = publish(net, Path(tmp) / "artifact", calib, settings=variant,
                                                runtime=OrtRuntime(threads=max(args.threads)))
                publish_seconds = time.perf_counter() - started
                for threads in args.threads:
                    sessions: dict[str, Session] = {
                        "ONNX Runtime FP32": OrtRuntime(threads=threads).build(result.fp32),
                        "ONNX Runtime INT8": OrtRuntime(threads=threads).build(result.int8),
                    }
                    if not int8_stem:  # the PyTorch reference once per network
                        sessions["PyTorch eager FP32"] = TorchRuntime(threads=threads).build(result.fp32)
                    rates = measure(sessions, planes, args.rounds, args.seconds)
                    rows += runtime_rows(rates, threads, size, int8_stem=int8_stem)
            gate = result.gate.report
            fidelity[label] = gate.to_dict() if gate is not None else {"error": result.gate.error}
            rows += fidelity_rows(gate, label, checkpoint=args.checkpoint is not None)
            notes.append(gate_note(label, gate, result.gate.error) + f" (publication {publish_seconds:.0f}s)")
    rows += regression_rows(rows, previous_int8_ratios(args.json))
    load = os.getloadavg()
    origins = "; ".join(origin for _, origin in networks)
    report(f"{', '.join(net.size.name for net, _ in networks)} inference, batch {args.batch} ({origins})",
           rows, args.json, meta={"cpu_flags": cpu_flags(), "load_average": load, "network": origins,
                                  "sizes": [net.size.name for net, _ in networks], "batch": args.batch,
                                  "int8_fidelity": fidelity})
    for note in notes:
        console.print(note)
    console.print(f"CPU: {cpu_flags()}; load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} "
                  f"on {os.cpu_count()} CPUs; QAT {settings.qat.steps} steps at lr {settings.qat.lr:g}")


def gate_note(label: str, gate: FidelityReport | None, error: str | None) -> str:
    """One line on the INT8 artifact's fidelity against the gate's thresholds."""
    if gate is None:
        return f"{label}: INT8 artifact could not be gated: {error}"
    t = gate.thresholds
    return (f"{label}: INT8 fidelity on {gate.positions} calibration positions: top-1 agreement "
            f"{gate.agreement:.4f} (>= {t.min_agreement}), legal KL {gate.kl_mean:.5f} "
            f"(<= {t.max_kl}), WDL MAE {gate.wdl_mae:.5f} (<= {t.max_wdl_mae}) -> "
            f"{'PASS' if gate.passed else 'FAIL: ' + '; '.join(gate.failures)}")


STEM_LABEL = {False: "", True: ", INT8 stem"}
"""Row-name suffix of each publication mode: SPEC 9's float stem, or ``publish.int8_stem``."""


def runtime_rows(rates: dict[str, float], threads: int, size: str, *, int8_stem: bool = False) -> list[Row]:
    """One network's rows at one thread setting: torch FP32 (when measured),
    ONNX Runtime FP32 against it, INT8 against ORT FP32 of the same export."""
    per = f"{threads} thread{'s' if threads > 1 else ''}, {size}{STEM_LABEL[int8_stem]}"
    goal = target("int8-vs-fp32-1-thread" if threads == 1 else "int8-vs-fp32")
    extra = {"threads": threads, "size": size, "int8_stem": int8_stem}
    ort_fp32, int8 = rates["ONNX Runtime FP32"], rates["ONNX Runtime INT8"]
    torch_fp32 = rates.get("PyTorch eager FP32")
    rows = []
    if torch_fp32 is not None:
        rows.append(Row(f"PyTorch eager FP32, {per}", torch_fp32, "positions/s", "reference", None, extra))
    rows += [
        Row(f"ONNX Runtime FP32, {per}", ort_fp32, "positions/s",
            f"PyTorch eager FP32, {per}" if torch_fp32 else "reference",
            ort_fp32 / torch_fp32 if torch_fp32 else None, extra),
        Row(f"ONNX Runtime INT8, {per}", int8, "positions/s", f"ONNX Runtime FP32, {per}", int8 / ort_fp32,
            {**extra, **({"vs_torch_fp32": round(int8 / torch_fp32, 3)} if torch_fp32 else {})}, goal),
    ]
    return rows


def previous_int8_ratios(path: Path | None) -> dict[tuple[str, int, bool], tuple[float, str]]:
    """INT8 over ORT FP32 per (network size, thread count, INT8 stem) in the
    JSON a previous run left at `path` (or beside it as
    ``<name>.previous.json``, where ``run_all`` moves it), in this script's
    rows or the formats before (shared rows; one network, its size in
    ``network``; float stems only), with that run's date; empty when there
    is none."""
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
    only_size = str(data.get("network", "")).split(" ")[0]
    out: dict[tuple[str, int, bool], tuple[float, str]] = {}
    for row in data.get("rows", []):
        name = str(row.get("name") or row.get("runtime") or "")
        if not name.startswith("ONNX Runtime INT8"):
            continue
        extra = row.get("extra", {})
        threads = extra.get("threads", row.get("threads"))
        key = (str(extra.get("size", only_size)), int(threads or 0), bool(extra.get("int8_stem", False)))
        ratio = row.get("ratio", row.get("vs_ort_fp32"))
        if threads is not None and ratio:
            out[key] = (float(ratio), when or str(path))
    return out


def regression_rows(rows: Sequence[Row], previous: Mapping[tuple[str, int, bool], tuple[float, str]]) -> list[Row]:
    """INT8 over FP32 now against the previous run's, per network size,
    thread count and stem mode: a drop of more than 10% is MISSED (issue 24:
    the regression showed only as a plain ratio)."""
    out = []
    for row in rows:
        threads = row.extra.get("threads") if row.name.startswith("ONNX Runtime INT8") else None
        if threads is None:
            continue
        key = (str(row.extra.get("size")), int(threads), bool(row.extra.get("int8_stem", False)))
        if row.ratio is None or key not in previous:
            continue
        before, when = previous[key]
        out.append(Row(f"INT8 over FP32 vs the previous run, {threads} thread{'s' if threads > 1 else ''}, "
                       f"{key[0]}{STEM_LABEL[key[2]]}", row.ratio, "x (INT8/FP32)",
                       f"previous run {before:.2f}x ({when})", row.ratio / before,
                       {"threads": threads, "size": key[0], "int8_stem": key[2], "previous": before},
                       target("int8-no-regression")))
    return out


def fidelity_rows(gate: FidelityReport | None, label: str, *, checkpoint: bool) -> list[Row]:
    """The INT8 artifact's fidelity figures against the gate's targets (none if it was not gated)."""
    if gate is None:
        return []
    against = "source network" + ("" if checkpoint else " (fitted to a synthetic task)")
    extra = {"positions": gate.positions, "gate": "pass" if gate.passed else "FAIL", "network": label}
    return [
        Row(f"INT8 fidelity, {label}: top-1 legal agreement", gate.agreement, "share", against, None, extra,
            target("int8-agreement")),
        Row(f"INT8 fidelity, {label}: mean legal-policy KL", gate.kl_mean, "nats", against, None, extra,
            target("int8-kl")),
        Row(f"INT8 fidelity, {label}: WDL mean absolute error", gate.wdl_mae, "abs. error", against, None, extra,
            target("int8-wdl-mae")),
    ]


if __name__ == "__main__":
    main()
