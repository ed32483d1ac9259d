"""GPU paths (issue 13): run by ``scripts/gpu_check.sh`` (``pytest -m gpu``); skipped without CUDA.

Not run on the development machines (no GPU): these tests are the check a
GPU machine makes of the code paths written for it -- the torch backend on
CUDA against ONNX Runtime on the CPU, CUDA-graph replay against eager
execution, sessions of several actors in flight on one GPU, two self-play
actors on one GPU playing side by side what each plays alone, actors placed
over two GPUs, NCCL DDP
against a single process, ONNX Runtime's GPU providers, and a TensorRT
refit against a fresh build.

Each skip reason starts with the requirement the machine lacks (``cuda``,
``ort-gpu``, ``tensorrt``, ``two-gpus``: ``tests/gpu_check_support.py``):
the GPU check fails on a skip that no missing requirement explains.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from placement_support import two_actors_on_one_device
from publish_support import (  # noqa: F401
    against_ort_cpu,
    calibration,
    legal_kl,
    one_thread,
    trained_net,
)

from chesszero.config.schema import InferenceConfig
from chesszero.publish import (
    PublishSettings,
)
from chesszero.publish.artifact import Artifact
from chesszero.publish.backends import (
    backend_unavailable_reason,
    make_runtime,
    publication_scheme,
    visible_gpus,
)
from chesszero.publish.loading import load_evaluator
from chesszero.publish.pipeline import PublishResult, publish
from chesszero.publish.placement import resolve_layout
from chesszero.publish.runtime import TorchRuntime

CUDA = torch.cuda.is_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not CUDA, reason="cuda: no CUDA device")]


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_torch_backend_on_cuda_agrees_with_ort_cpu(published_on_cpu: PublishResult, precision: str) -> None:
    artifact = published_on_cpu.int8 if precision == "int8" else published_on_cpu.fp32
    runtime = make_runtime("torch")
    assert runtime.name.startswith("torch-cuda:0")
    report = against_ort_cpu(artifact, runtime.build(artifact))
    assert report.passed, report.failures


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, None])
def test_cuda_graph_replay_matches_eager(published_on_cpu: PublishResult, dtype: torch.dtype | None) -> None:
    from chesszero.publish.torch_cuda import CudaTorchSession

    session = TorchRuntime(device="cuda:0", dtype=dtype).build(published_on_cpu.fp32)
    assert isinstance(session, CudaTorchSession)
    planes = calibration().planes
    for n in (1, 7, 64):
        eager = session.eager(planes[:n])
        first = session.evaluate(planes[:n])  # captures
        again = session.evaluate(planes[:n])  # replays
        for got in (first, again):
            np.testing.assert_allclose(got[0], eager[0], rtol=1e-3, atol=1e-3)
            np.testing.assert_allclose(got[1], eager[1], rtol=1e-3, atol=1e-3)
    assert sorted(session._graphs) == [1, 7, 64]
    other = planes[64:128]  # new inputs through the same graph
    np.testing.assert_allclose(session.evaluate(other)[0], session.eager(other)[0], rtol=1e-3, atol=1e-3)


def test_actor_sessions_share_a_gpu_in_flight(published_on_cpu: PublishResult) -> None:
    planes = calibration().planes
    reference = TorchRuntime(device="cuda:0").build(published_on_cpu.int8).evaluate(planes)
    sessions = [load_evaluator(published_on_cpu.int8.path, backend="torch") for _ in range(4)]
    results: list[tuple[np.ndarray, np.ndarray] | None] = [None] * 4
    start = threading.Barrier(4)

    def run(k: int) -> None:
        start.wait()
        for _ in range(5):
            results[k] = sessions[k].evaluate(planes)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for result in results:
        assert result is not None
        np.testing.assert_allclose(result[0], reference[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", ["torch", "ort-gpu", "tensorrt"])
def test_two_actors_on_one_gpu_play_in_flight_what_each_plays_alone(
        published_on_cpu: PublishResult, backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Two actors placed on cuda:0 (inference.gpus 1, actors_per_gpu 2), each with its own
    session, run side by side with their batches in flight at once and play exactly the
    games each plays alone (deterministic cuDNN kernels: equal inputs, equal outputs)."""
    reason = backend_unavailable_reason(backend)
    if reason is not None:
        pytest.skip(f"{backend}: {reason}")
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    inference = InferenceConfig(backend=backend, gpus=1, actors_per_gpu=2)
    layout = resolve_layout(inference, cpu_actors=2, visible=visible_gpus())
    assert (layout.actors, layout.device(0), layout.device(1)) == (2, 0, 0)
    artifact = published_on_cpu.int8 if backend == "torch" else _gpu_int8(backend, tmp_path / "g")
    run = two_actors_on_one_device(artifact.path, backend, layout)
    assert run.most_in_flight == 2
    assert run.alone[0] != run.alone[1]
    assert run.together == run.alone


def _gpu_int8(backend: str, folder: Path) -> Artifact:
    """An INT8 artifact on TensorRT's grids, gated in ``backend`` (as its campaigns publish)."""
    settings = PublishSettings(scheme=publication_scheme(backend))
    result = publish(trained_net(), folder, calibration(), settings=settings, runtime=make_runtime(backend))
    assert result.activated, result.gate.error or result.gate.report
    return result.int8


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="two-gpus: placement over GPUs needs two")
def test_actors_on_two_gpus_build_their_sessions_on_their_own_device(published_on_cpu: PublishResult) -> None:
    inference = InferenceConfig(backend="torch", gpus=2, actors_per_gpu=2)
    layout = resolve_layout(inference, cpu_actors=1, visible=visible_gpus())
    sessions = [load_evaluator(published_on_cpu.int8.path, backend="torch", device=layout.device(i))
                for i in range(layout.actors)]
    assert [str(s.device) for s in sessions] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    planes = calibration().planes[:32]
    first = sessions[0].evaluate(planes)
    np.testing.assert_allclose(sessions[1].evaluate(planes)[0], first[0], rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(backend_unavailable_reason("ort-gpu") is not None,
                    reason=f"ort-gpu: {backend_unavailable_reason('ort-gpu')}")
def test_ort_gpu_publication_passes_its_gate(tmp_path: Path) -> None:
    settings = PublishSettings(scheme=publication_scheme("ort-gpu"))
    result = publish(trained_net(), tmp_path / "g", calibration(), settings=settings,
                     runtime=make_runtime("ort-gpu"))
    assert result.activated, result.gate.error or result.gate.report


@pytest.mark.skipif(backend_unavailable_reason("tensorrt") is not None,
                    reason=f"tensorrt: {backend_unavailable_reason('tensorrt')}")
def test_tensorrt_refit_reproduces_a_fresh_build(tmp_path: Path) -> None:
    settings = PublishSettings(scheme=publication_scheme("tensorrt"))
    refitting = make_runtime("tensorrt")
    first = publish(trained_net(), tmp_path / "g1", calibration(), settings=settings, runtime=refitting)
    assert first.activated
    net = trained_net(seed=2)  # same topology, other weights and scales
    second = publish(net, tmp_path / "g2", calibration(), settings=settings, runtime=refitting)
    assert second.gate.session is not None
    fresh = make_runtime("tensorrt").build(second.int8)
    planes, legal = calibration().planes, calibration().legal
    refit_policy, refit_wdl = second.gate.session.evaluate(planes)
    fresh_policy, fresh_wdl = fresh.evaluate(planes)
    kl = legal_kl(fresh_policy, refit_policy, legal)
    assert np.median(kl) < 1e-4 and kl.max() < 1e-2, np.sort(kl)[-5:]
    assert np.abs(refit_wdl - fresh_wdl).mean() < 1e-3


def _ddp_rank(rows: object, out: str) -> None:
    from test_train_ddp import _cfg, _run  # the CPU test's quantum, here on NCCL

    trainer, losses = _run(_cfg(world_size=2, bf16=True), rows)  # type: ignore[arg-type]
    assert trainer.ctx.backend == "nccl"
    if trainer.ctx.is_main:
        torch.save({"losses": losses}, out)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="two-gpus: NCCL DDP needs two GPUs")
@pytest.mark.timeout(300)
def test_nccl_ddp_matches_single_process_within_bf16(tmp_path: Path) -> None:
    from test_train_ddp import _cfg, _run
    from train_support import make_rows

    from chesszero.train import spawn_local

    rows = make_rows(48, seed=21)
    out = tmp_path / "rank0.pt"
    spawn_local(_ddp_rank, 2, rows, str(out))
    ddp = torch.load(out, weights_only=True)["losses"]
    _, single = _run(_cfg(world_size=1, micro_batches=2, bf16=True), rows)  # on cuda:0
    assert ddp == pytest.approx(single, rel=2e-2)
