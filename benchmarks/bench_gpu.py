"""GPU backends: publication and gate per backend, self-play vs pure inference, INT8 vs FP16.

Part of ``scripts/gpu_check.sh``. **Unverified**: written on machines without a
GPU and never run; the numbers it prints are the first measurements.

For a paper-size network (``--size``, default 14x160; seeded initial weights,
or ``--checkpoint``) and each GPU backend this machine can run (``torch``,
``ort-gpu``, ``tensorrt``; the others are listed with the reason):

1. publish it and gate it on the 516 calibration positions in that backend
   (the backend's INT8 scheme; FP32 artifact for ``torch``, INT8 for the others);
2. with the gated session, one double-buffered native actor at ``--batch``
   (the paper preset's ``selfplay.batch_size``; ``bench_search.paired_ratio``):
   its network evaluations/s (terminal hits excluded) against pure inference
   positions/s on the same batch sizes, real positions; target ratio >= 0.85
   (``targets.py``: ``gpu-selfplay-vs-inference``); its searches/s beside it;
3. actors sharing one GPU (``torch`` and ``ort-gpu``): for each count in
   ``--actors-per-gpu`` (default 1, 2, 4; the paper runs 4), that many
   double-buffered actors placed by ``publish.placement`` on cuda:0, each with
   its own session, play side by side; their summed network evaluations/s
   against the pure inference rate of one session (the number that sizes
   ``inference.actors_per_gpu``), and their summed searches/s. ``tensorrt``
   is left out: each actor builds its own engine (minutes for 14x160);
4. INT8 against FP16: the best INT8 GPU path (TensorRT, else ONNX Runtime's GPU
   providers) against the torch backend in float16 on the FP32 artifact, same
   batch; target >= 1.3x (``gpu-int8-vs-fp16``).

Each target result carries the target (``targets.Target`` as a dict) and ``met``.

Each step's error is recorded in the JSON instead of ending the run.

Usage::

    python benchmarks/bench_gpu.py [--json reports/gpu/backends.json] [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from bench_search import ActorRun, inference_rate, paired_ratio
from common import machine
from rich.console import Console
from targets import check, target

from chesszero.config.schema import InferenceConfig
from chesszero.model.network import ChessNet
from chesszero.publish import Precision, PublishSettings, load_calibration_set, publish
from chesszero.publish.backends import (
    backend_unavailable_reason,
    make_runtime,
    publication_scheme,
    visible_gpus,
)
from chesszero.publish.loading import load_evaluator
from chesszero.publish.placement import resolve_layout
from chesszero.publish.runtime import TorchRuntime

OPT_IN = True  # GPU machines only (scripts/gpu_check.sh), not part of `chesszero bench`
GPU_BACKENDS = ("torch", "ort-gpu", "tensorrt")
console = Console(stderr=True)


def _step(results: dict[str, Any], key: str, work: Callable[[], Any]) -> Any:
    """Runs one step under a status line; its result or its error goes to ``results[key]``."""
    start = time.perf_counter()
    with console.status(key):
        try:
            value = work()
            results[key] = {"ok": True, "seconds": round(time.perf_counter() - start, 2), **value}
            return value
        except Exception as error:  # noqa: BLE001 - recorded, the other steps still run
            results[key] = {"ok": False, "error": f"{type(error).__name__}: {error}",
                            "trace": traceback.format_exc(limit=4)}
            return None


def _network(args: argparse.Namespace) -> ChessNet:
    if args.checkpoint is not None:
        from chesszero.train.checkpoint import load_model

        return load_model(args.checkpoint).eval()
    torch.manual_seed(0)
    return ChessNet(args.size).eval()


def _gate(net: ChessNet, backend: str, out: Path, calib: Any) -> dict[str, Any]:
    precision = Precision.FP32 if backend == "torch" else Precision.INT8
    settings = PublishSettings(scheme=publication_scheme(backend), precision=precision)
    runtime = make_runtime(backend, threads=None)
    result = publish(net, out, calib, settings=settings, runtime=runtime)
    report = result.gate.report
    return {"runtime": runtime.name, "activated": result.activated, "error": result.gate.error,
            "fidelity": report.summary() if report else None, "failures": list(report.failures) if report else [],
            "_result": result}


def _verdict(name: str, ratio: float) -> dict[str, Any]:
    goal = target(name)
    return {"target": goal.as_dict(), "met": check(goal, rate=ratio, unit="x", ratio=ratio).met}


def _throughput(session: Any, planes: np.ndarray, seconds: float) -> dict[str, Any]:
    paired = paired_ratio(session, batch=len(planes), depth=2, rounds=3, seconds=seconds)
    return {"inference_pos_per_s": paired.inference_pos_per_s,
            "selfplay_evaluations_per_s": paired.evaluations_per_s,
            "selfplay_searches_per_s": paired.searches_per_s, "mean_batch": paired.mean_batch,
            "ratio": paired.ratio, **_verdict("gpu-selfplay-vs-inference", paired.ratio)}


def _actors_per_gpu(backend: str, artifact: Path, planes: np.ndarray, counts: list[int],
                    seconds: float) -> dict[str, Any]:
    """Summed self-play evaluations/s and searches/s of ``k`` actors sharing cuda:0, for each ``k``
    in ``counts``, against one session's pure inference on the full batch."""
    def session(device: int) -> Any:
        return load_evaluator(artifact, backend=backend, device=device, plain_onnx=False)

    pure_session = session(0)
    pure_session.evaluate(planes)
    pure = inference_rate(pure_session, planes, seconds)
    batch, rows = len(planes), {}
    for k in counts:
        visible = visible_gpus()  # 0 only in a dry run of the torch backend on the CPU
        layout = resolve_layout(InferenceConfig(backend=backend, gpus=min(1, visible), actors_per_gpu=k),
                                cpu_actors=k, visible=visible)
        runs = [ActorRun(session(layout.device(i)), games=2 * batch, batch=batch, depth=2, visits=64)
                for i in range(layout.actors)]
        batches = max(3, int(seconds * pure / batch / k))
        try:
            with ThreadPoolExecutor(k) as pool:
                windows = list(pool.map(lambda run, n=batches: run.window(batches=n), runs))
        finally:
            for run in runs:
                run.close()
        evaluations = sum(w.evaluations_per_s for w in windows)
        rows[str(k)] = {"evaluations_per_s": evaluations, "searches_per_s": sum(w.searches_per_s for w in windows),
                        "per_actor_evaluations": [w.evaluations_per_s for w in windows],
                        "ratio_to_pure": evaluations / pure}
    return {"inference_pos_per_s": pure, "batch": batch, "actors_per_gpu": rows}


def _int8_vs_fp16(gated: dict[str, Any], planes: np.ndarray, seconds: float) -> dict[str, Any]:
    int8_backend = next((b for b in ("tensorrt", "ort-gpu") if b in gated), None)
    if int8_backend is None:
        raise RuntimeError("no INT8 GPU path passed its gate here (tensorrt, ort-gpu)")
    int8_session = gated[int8_backend].gate.session
    fp32_artifact = gated[int8_backend].fp32
    fp16 = TorchRuntime(device="cuda:0", dtype=torch.float16).build(fp32_artifact)
    for session in (int8_session, fp16):
        session.evaluate(planes)  # build graphs and engines outside the timing
    int8_rate = inference_rate(int8_session, planes, seconds)
    fp16_rate = inference_rate(fp16, planes, seconds)
    return {"int8_path": int8_backend, "int8_pos_per_s": int8_rate, "fp16_torch_pos_per_s": fp16_rate,
            "ratio": int8_rate / fp16_rate, **_verdict("gpu-int8-vs-fp16", int8_rate / fp16_rate)}


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"actor counts must be integers like 1,2,4, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"actor counts must be >= 1, got {text!r}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="14x160", help="network size (default: the paper's)")
    parser.add_argument("--checkpoint", type=Path, default=None, help="publish this training checkpoint")
    parser.add_argument("--batch", type=int, default=320, help="actor batch (paper selfplay.batch_size)")
    parser.add_argument("--seconds", type=float, default=3.0, help="per timing window")
    parser.add_argument("--actors-per-gpu", type=_counts, default=[1, 2, 4],
                        help="actor counts sharing cuda:0, comma-separated (default 1,2,4)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": machine(), "cuda": torch.cuda.is_available(),
                               "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]}
    calib = load_calibration_set()
    planes = np.concatenate([calib.planes] * (args.batch // len(calib) + 1))[: args.batch]
    net = _network(args)
    gated: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in GPU_BACKENDS:
            reason = backend_unavailable_reason(backend)
            if reason is not None:
                results[f"{backend}/unavailable"] = reason
                continue
            outcome = _step(results, f"{backend}/gate", lambda b=backend: _gate(net, b, Path(tmp) / b, calib))
            if outcome is None or not outcome["activated"]:
                continue
            gated[backend] = outcome.pop("_result")
            results[f"{backend}/gate"].pop("_result", None)
            _step(results, f"{backend}/selfplay_vs_inference",
                  lambda b=backend: _throughput(gated[b].gate.session, planes, args.seconds))
            if backend == "tensorrt":
                results["tensorrt/actors_per_gpu"] = "not measured: each actor builds its own engine"
                continue
            artifact = gated[backend].fp32 if backend == "torch" else gated[backend].int8
            _step(results, f"{backend}/actors_per_gpu",
                  lambda b=backend, a=artifact: _actors_per_gpu(b, a.path, planes, args.actors_per_gpu,
                                                                args.seconds))
        _step(results, "int8_vs_fp16", lambda: _int8_vs_fp16(gated, planes, args.seconds))
    text = json.dumps(results, indent=2, default=str)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
