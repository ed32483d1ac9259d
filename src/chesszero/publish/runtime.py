"""Inference runtimes behind one interface: build, activate, evaluate.

A :class:`Runtime` turns an :class:`~chesszero.publish.artifact.Artifact`
into a :class:`Session` (``build``: load, compile or refit -- possibly
slow), makes a session the one it serves (``activate``: a reference swap,
so evaluation never sees a half-built model) and evaluates batches with the
active session (``evaluate``).  Sessions and runtimes are both search
evaluators (:class:`chesszero.search.evaluators.Evaluator`):
``evaluate(planes float32 [N, 52, 8, 8]) -> (policy_logits float32 [N, 1880],
wdl float32 [N, 3] probabilities)``, followed by ``moves_left float32 [N]``
(plies) when the artifact has that output.  The fidelity gate
scores a freshly built session *before* it is activated.

Backends here:

- :class:`OrtRuntime`: ONNX Runtime on CPU, FP32 or INT8 artifacts
  (intra-op threads configurable; full graph optimisation, which fuses the
  INT8 QDQ pattern into ``QLinearConv``/``QLinearAdd``).
- :class:`TorchRuntime`: PyTorch on CPU (eager, float32) or CUDA
  (:class:`~chesszero.publish.torch_cuda.CudaTorchSession`: autocast, CUDA
  graphs, pinned buffers), from the deployment state stored next to the
  artifact (INT8 artifacts run fake-quantised with their frozen scales);
  :meth:`TorchRuntime.session_for` also wraps a live training network (the
  fidelity reference, eager).
- TensorRT lives in :mod:`chesszero.publish.tensorrt_runtime` (optional).
"""

from __future__ import annotations

import copy
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from torch import nn

from chesszero import core
from chesszero.model.network import ChessNet
from chesszero.publish.artifact import INPUT_NAME, Artifact, ArtifactError, Precision, load_artifact
from chesszero.publish.deploy_net import DeployNet
from chesszero.publish.export import load_deploy_state

if TYPE_CHECKING:
    from chesszero.publish.torch_cuda import CudaTorchSession

__all__ = ["OrtRuntime", "OrtSession", "Runtime", "Session", "TorchRuntime", "TorchSession"]


class Session(Protocol):
    """One built artifact in one runtime; a search evaluator.

    ``artifact`` names the file it was built from; the publication pipeline
    re-points it after a metadata-only rewrite of that file (same weights).
    """

    artifact: Artifact | None

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, ...]: ...


def _as_artifact(artifact: Artifact | str | Path) -> Artifact:
    return artifact if isinstance(artifact, Artifact) else load_artifact(artifact)


def _check_planes(planes: np.ndarray) -> np.ndarray:
    planes = np.ascontiguousarray(planes, dtype=np.float32)
    if planes.ndim != 4 or planes.shape[1:] != (core.NUM_PLANES, 8, 8):
        raise ValueError(f"planes must be float32 [N, {core.NUM_PLANES}, 8, 8], got shape {planes.shape}")
    return planes


def _to_tensor(planes: np.ndarray) -> torch.Tensor:
    """A CPU tensor of checked planes (copied only when the array is read-only)."""
    planes = _check_planes(planes)
    return torch.from_numpy(planes if planes.flags.writeable else planes.copy())


class Runtime(ABC):
    """Build sessions from artifacts, serve the active one."""

    name: str = "runtime"

    def __init__(self) -> None:
        self._active: Session | None = None
        self._lock = threading.Lock()

    @abstractmethod
    def build(self, artifact: Artifact | str | Path) -> Session:
        """Prepare ``artifact`` for evaluation without serving it yet."""

    def activate(self, session: Session) -> None:
        """Serve ``session`` from now on (the previous one is released)."""
        with self._lock:
            self._active = session

    @property
    def active(self) -> Session | None:
        """The session being served, if any."""
        return self._active

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, ...]:
        """Evaluate with the active session; ``RuntimeError`` when none is active."""
        session = self._active
        if session is None:
            raise RuntimeError(f"{self.name}: no artifact is active (build and activate one first)")
        return session.evaluate(planes)


class OrtSession:
    """An ONNX Runtime inference session for one artifact."""

    def __init__(self, artifact: Artifact, session: object) -> None:
        self.artifact = artifact
        self.session = session

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(self.session.run(None, {INPUT_NAME: _check_planes(planes)}))  # type: ignore[attr-defined]


class OrtRuntime(Runtime):
    """ONNX Runtime, CPU execution provider.

    ``threads``: intra-op threads (``None``: ONNX Runtime's default, one per
    physical core).  Inter-op parallelism is off (one graph at a time).
    """

    name = "onnxruntime-cpu"

    def __init__(self, *, threads: int | None = None) -> None:
        super().__init__()
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = threads

    def session_options(self) -> object:
        """The ``onnxruntime.SessionOptions`` used for every session."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.inter_op_num_threads = 1
        if self.threads is not None:
            options.intra_op_num_threads = self.threads
        return options

    def build(self, artifact: Artifact | str | Path) -> OrtSession:
        import onnxruntime as ort

        artifact = _as_artifact(artifact)
        try:
            session = ort.InferenceSession(
                str(artifact.path), self.session_options(), providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # ORT raises its own exception types for bad graphs
            raise ArtifactError(f"{artifact.path}: ONNX Runtime cannot load it: {error}") from error
        return OrtSession(artifact, session)


class _SourceView(nn.Module):
    """A training network as an evaluator module: (policy logits, WDL probabilities),
    and with ``moves_left`` the plies left by its length head."""

    def __init__(self, net: ChessNet, *, moves_left: bool = False) -> None:
        super().__init__()
        if moves_left:
            net.require_length_head("moves_left")
        self.net = net if moves_left else None
        self.view = net.inference_view()

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.net is not None:
            out = self.net(planes)
            return out.policy, torch.softmax(out.wdl, dim=1), out.length * core.LENGTH_SCALE
        policy, wdl_logits = self.view(planes)
        return policy, torch.softmax(wdl_logits, dim=1)


class TorchSession:
    """PyTorch eager evaluation of a module returning (policy logits, WDL probabilities[, plies left])."""

    def __init__(self, module: nn.Module, device: torch.device, artifact: Artifact | None) -> None:
        self.module = module.to(device).eval()
        self.device = device
        self.artifact = artifact

    @torch.inference_mode()
    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, ...]:
        x = _to_tensor(planes).to(self.device, non_blocking=True)
        return tuple(t.float().cpu().numpy() for t in self.module(x))


class TorchRuntime(Runtime):
    """PyTorch on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).

    Builds from the deployment state named in the artifact's metadata (the
    file next to the ONNX model, written by the same publication); an INT8
    artifact runs fake-quantised with its scales frozen as the ONNX export
    froze them, i.e. the INT8 arithmetic simulated in float32. On CPU
    sessions run eagerly in float32; on CUDA they are
    :class:`~chesszero.publish.torch_cuda.CudaTorchSession` s (``dtype``:
    autocast type of FP32 artifacts, ``None`` for float32; ``graphs``: CUDA
    graphs per batch size). ``threads`` sets ``torch.set_num_threads``
    (process-wide) when given.
    """

    def __init__(self, *, device: str | torch.device = "cpu", threads: int | None = None,
                 dtype: torch.dtype | None = torch.bfloat16, graphs: bool = True) -> None:
        super().__init__()
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"torch runtime: device {self.device} requested but CUDA is not available")
        self.dtype = dtype if self.device.type == "cuda" else None
        self.graphs = graphs
        if threads is not None:
            torch.set_num_threads(threads)

    @property
    def name(self) -> str:  # type: ignore[override]
        """``torch-cpu-fp32``, ``torch-cuda:0-bfloat16-graphs``, ...: what the gate measured."""
        if self.device.type != "cuda":
            return f"torch-{self.device}-fp32"
        dtype = str(self.dtype).removeprefix("torch.") if self.dtype is not None else "fp32"
        return f"torch-{self.device}-{dtype}{'-graphs' if self.graphs else ''}"

    def build(self, artifact: Artifact | str | Path) -> TorchSession | CudaTorchSession:
        artifact = _as_artifact(artifact)
        if not artifact.metadata.torch_state:
            raise ArtifactError(f"{artifact.path}: no deployment state recorded for torch runtimes")
        precision = artifact.metadata.precision
        net = load_deploy_state(artifact.path.parent / artifact.metadata.torch_state, precision=precision)
        if precision is Precision.INT8:
            net.freeze()
        if self.device.type != "cuda":
            return TorchSession(net, self.device, artifact)
        if net.moves_left:
            raise ArtifactError(f"{artifact.path}: the CUDA torch session does not serve the moves_left output yet "
                                "(publish without search.moves_left, or use ONNX Runtime or torch on the CPU)")
        from chesszero.publish.torch_cuda import CudaTorchSession

        dtype = None if precision is Precision.INT8 else self.dtype  # integer grids need float32
        return CudaTorchSession(net, self.device, artifact, dtype=dtype, graphs=self.graphs)

    def session_for(self, net: ChessNet | DeployNet, *, moves_left: bool = False) -> TorchSession:
        """A session evaluating a snapshot (deep copy) of ``net``; ``net`` is left untouched.

        A training network gives the plies left too with ``moves_left`` (a
        deployment network gives them when it was folded with its length head).
        """
        snapshot = copy.deepcopy(net)
        module: nn.Module = (
            _SourceView(snapshot, moves_left=moves_left) if isinstance(snapshot, ChessNet) else snapshot
        )
        return TorchSession(module, self.device, None)
