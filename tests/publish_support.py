"""Shared helpers for the publication tests: positions, a briefly trained tiny network.

A freshly initialised network predicts an almost flat policy (final layers
start at std 0.01), so top-1 agreement between it and any copy is decided by
near-ties.  :func:`trained_net` fits a tiny network for a few dozen steps to
a fixed, position-dependent move preference (and a material-sign WDL), so
its policies are peaked like a trained network's and its BatchNorm running
statistics are real -- which is what folding and quantisation must preserve.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from chesszero import core
from chesszero.model import ChessNet
from chesszero.publish.calibration import (
    CalibrationSet,
    calibration_set_from_games,
    random_positions,
)
from chesszero.studies.teacher import TeacherFit


@contextlib.contextmanager
def torch_threads(n: int = 1) -> Iterator[None]:
    """Run torch with ``n`` intra-op threads (tiny networks on a shared 2-core
    machine are far faster single-threaded), restoring the setting after."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Every publication test runs torch single-threaded."""
    with torch_threads(1):
        yield


def random_games(n: int, seed: int = 0, max_plies: int = 80) -> list[core.Game]:
    """``n`` unfinished games after 0..max_plies random legal moves (``publish.calibration.random_positions``)."""
    return random_positions(n, seed=seed, max_plies=max_plies)


@functools.cache
def calibration(n: int = 128, seed: int = 0) -> CalibrationSet:
    """A calibration set of random-play positions (cached)."""
    return calibration_set_from_games(random_games(n, seed), source=f"random play seed {seed}")


@functools.cache
def _trained_state(size: str, steps: int, seed: int) -> dict[str, torch.Tensor]:
    with torch_threads(1):
        return _train(size, steps, seed)


def _train(size: str, steps: int, seed: int) -> dict[str, torch.Tensor]:
    net = TeacherFit(size, calibration(256, seed + 1), seed=seed).fit(steps)
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def trained_net(size: str = "2x16", steps: int = 80, seed: int = 0) -> ChessNet:
    """A fresh copy of a briefly trained network (eval mode; training is cached)."""
    net = ChessNet(size)
    net.load_state_dict(_trained_state(size, steps, seed))
    return net.eval()


def legal_kl(p_logits: np.ndarray, q_logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Per-position KL(p || q) of the policies softmaxed over legal actions (test reference)."""
    def log_softmax(x: np.ndarray) -> np.ndarray:
        x = np.where(legal, x.astype(np.float64), -np.inf)
        x = x - x.max(axis=1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=1, keepdims=True))

    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    with np.errstate(invalid="ignore"):
        return np.where(legal, np.exp(lp) * (lp - lq), 0.0).sum(axis=1)


def assert_integer_kernels_agree(simulated: np.ndarray, runtime: np.ndarray, legal: np.ndarray) -> None:
    """ONNX Runtime's INT8 kernels against the fake-quantised float simulation.

    Integer dot products are exact on every CPU, but the float steps around
    them (the float stem, requantisation, accumulation order of fused ops)
    round differently per ISA, so an activation that lands on a rounding
    boundary can flip by one quantisation step: AVX2 machines showed no flip
    on the 128 calibration positions, an AVX-512 VNNI machine two (KL 9e-6
    and 1.2e-3; every other position below 1e-12). So: at least 96% of the
    positions agree to KL < 1e-9, and no position moves more than a few
    steps (KL < 0.02). A kernel that saturates (8-bit weights on AVX2 without
    VNNI) or computes something else changes most positions, and fails.
    Checked on: AVX2 (no VNNI) and AVX-512 VNNI x86-64 machines.
    """
    kl = legal_kl(simulated, runtime, legal)
    assert (kl < 1e-9).mean() >= 0.96, np.sort(kl)[-8:]
    assert kl.max() < 0.02, np.sort(kl)[-8:]



def publish_on_cpu(folder):  # (Path) -> PublishResult
    """:func:`trained_net` published into ``folder`` and gated on ONNX Runtime (CPU)."""
    from chesszero.publish.pipeline import publish
    from chesszero.publish.runtime import OrtRuntime

    result = publish(trained_net(), folder, calibration(), runtime=OrtRuntime(threads=1))
    assert result.activated
    return result

def against_ort_cpu(artifact, candidate):  # (Artifact, Evaluator) -> FidelityReport
    """``candidate`` against ONNX Runtime (CPU) running ``artifact``, on the gate's
    516 calibration positions, with the recipe's default thresholds."""
    from chesszero.publish import FidelityThresholds, load_calibration_set, measure_fidelity
    from chesszero.publish.loading import load_evaluator

    return measure_fidelity(load_evaluator(artifact.path, backend="ort-cpu"), candidate,
                            load_calibration_set(), FidelityThresholds())


def published_and_rebuilt(net, folder):  # (ChessNet, Path) -> list[tuple[DeployNet, np.ndarray, np.ndarray]]
    """``net`` published into ``folder`` through the gate on ONNX Runtime (asserted
    activated); for its FP32 and INT8 artifacts, the rebuilt deployment state and the
    WDL that ONNX Runtime and the Torch runtime rebuilt from it give on 32 positions."""
    from chesszero.publish.export import load_deploy_state
    from chesszero.publish.pipeline import publish
    from chesszero.publish.runtime import OrtRuntime, TorchRuntime

    result = publish(net, folder, calibration(), runtime=OrtRuntime(threads=1))
    assert result.activated, result.gate.report.failures if result.gate.report else result.gate.error
    planes = calibration().planes[:32]
    out = []
    for artifact in (result.fp32, result.int8):
        state = load_deploy_state(artifact.path.parent / artifact.metadata.torch_state,
                                  precision=artifact.metadata.precision)
        ort_wdl = OrtRuntime(threads=1).build(artifact).evaluate(planes)[1]
        out.append((state, ort_wdl, TorchRuntime().build(artifact).evaluate(planes)[1]))
    return out
