"""PyTorch evaluation on a CUDA device: autocast, CUDA graphs, pinned host buffers.

Verification status: written against the PyTorch 2.x CUDA API
(``torch.cuda.CUDAGraph``, ``torch.cuda.graph``, pinned ``torch.empty``) and
**not run**: the development machines have no GPU. ``scripts/gpu_check.sh``
runs the GPU-marked tests that exercise it (agreement with ONNX Runtime,
graph replay against eager execution). Whatever it computes, the fidelity
gate scores a session before the campaign activates it.

:class:`CudaTorchSession` serves one module on one device:

- forward passes run under ``torch.autocast`` in ``dtype`` (bfloat16 by
  default, float16 on request, ``None`` for float32); an INT8 artifact's
  fake-quantised network always runs in float32, because its integer grids
  are simulated with float rounding that half precision would move;
- every batch size seen is captured once as a CUDA graph (up to
  ``max_graphs`` sizes; the self-play actors use one or two fixed sizes),
  with static device input and output tensors; a size beyond that runs
  eagerly;
- the C++ actor's planes are copied into a page-locked host buffer, then
  to the device asynchronously on the session's own stream, and the outputs
  come back through pinned buffers the same way.

One lock per session: actors that share a GPU each hold their own session
(their own stream and graphs), so their batches are in flight at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from chesszero import core
from chesszero.publish.artifact import Artifact
from chesszero.publish.runtime import _check_planes

__all__ = ["CudaTorchSession"]


@dataclass
class _Captured:
    """One batch size's CUDA graph with its static device and pinned host tensors."""

    graph: torch.cuda.CUDAGraph
    device_in: torch.Tensor
    policy: torch.Tensor
    wdl: torch.Tensor
    host_in: torch.Tensor
    host_policy: torch.Tensor
    host_wdl: torch.Tensor


def _pinned(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.empty(shape, dtype=torch.float32, pin_memory=True)


class CudaTorchSession:
    """A module returning (policy logits, WDL probabilities) served on one CUDA device."""

    def __init__(self, module: nn.Module, device: torch.device, artifact: Artifact | None, *,
                 dtype: torch.dtype | None = torch.bfloat16, graphs: bool = True,
                 max_graphs: int = 8) -> None:
        if device.type != "cuda":
            raise ValueError(f"CudaTorchSession needs a CUDA device, got {device}")
        self.device = device
        self.module = module.to(device).eval()
        self.artifact = artifact
        self.dtype = dtype
        self.use_graphs = graphs
        self.max_graphs = max_graphs
        self.stream = torch.cuda.Stream(device=device)
        self._graphs: dict[int, _Captured] = {}
        self._lock = threading.Lock()

    def _forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # No autocast weight cache: a CUDA graph must not capture casts cached outside it.
        with torch.autocast("cuda", dtype=self.dtype or torch.float32, enabled=self.dtype is not None,
                            cache_enabled=False):
            policy, wdl = self.module(x)
        return policy.float(), wdl.float()

    def _capture(self, n: int) -> _Captured:
        shape = (n, core.NUM_PLANES, 8, 8)
        device_in = torch.zeros(shape, dtype=torch.float32, device=self.device)
        for _ in range(2):  # warm-up on the side stream (cuDNN picks its kernels here)
            self._forward(device_in)
        self.stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=self.stream, capture_error_mode="thread_local"):
            policy, wdl = self._forward(device_in)
        return _Captured(graph, device_in, policy, wdl, _pinned(shape),
                         _pinned((n, core.NUM_ACTIONS)), _pinned((n, 3)))

    def _graph_for(self, n: int) -> _Captured | None:
        if not self.use_graphs:
            return None
        captured = self._graphs.get(n)
        if captured is None and len(self._graphs) < self.max_graphs:
            captured = self._graphs[n] = self._capture(n)
        return captured

    @torch.no_grad()
    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        planes = _check_planes(planes)
        n = len(planes)
        with self._lock, torch.cuda.device(self.device), torch.cuda.stream(self.stream):
            captured = self._graph_for(n)
            if captured is None:
                return self._eager(planes)
            captured.host_in.numpy()[...] = planes
            captured.device_in.copy_(captured.host_in, non_blocking=True)
            captured.graph.replay()
            captured.host_policy.copy_(captured.policy, non_blocking=True)
            captured.host_wdl.copy_(captured.wdl, non_blocking=True)
            self.stream.synchronize()
            return captured.host_policy.numpy().copy(), captured.host_wdl.numpy().copy()

    def _eager(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        host_in = _pinned(planes.shape)
        host_in.numpy()[...] = planes
        policy, wdl = self._forward(host_in.to(self.device, non_blocking=True))
        host_policy, host_wdl = _pinned(tuple(policy.shape)), _pinned(tuple(wdl.shape))
        host_policy.copy_(policy, non_blocking=True)
        host_wdl.copy_(wdl, non_blocking=True)
        self.stream.synchronize()
        return host_policy.numpy(), host_wdl.numpy()

    def eager(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The same evaluation without graphs (the reference the graph replay must match)."""
        planes = _check_planes(planes)
        with self._lock, torch.no_grad(), torch.cuda.device(self.device), torch.cuda.stream(self.stream):
            return self._eager(planes)
