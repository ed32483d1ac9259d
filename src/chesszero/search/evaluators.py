"""Network evaluators: the one interface search and self-play call per batch.

``evaluate(planes float32[N, 52, 8, 8]) -> (policy_logits float32[N, 1880],
wdl float32[N, 3])`` with WDL *probabilities* (win, draw, loss for the side to
move). Illegal actions need no masking: the native search masks and softmaxes
over the legal moves itself. An evaluator asked for moves-left estimates
(``TorchEvaluator(..., moves_left=True)``) returns a third array, ``moves_left
float32[N]``: the plies left in each position's game by the length head, which
the search's moves-left utility (``SearchOptions.moves_left_slope``) needs;
the batch pipeline hands it on when present.

- :class:`OnnxEvaluator`: ONNX Runtime on CPU (input ``planes``, outputs
  ``policy_logits`` and softmaxed ``wdl``, as published artifacts have).
- :class:`TorchEvaluator`: any torch module returning ``(policy_logits,
  wdl_logits, ...)`` (e.g. ``ChessNet`` or its ``inference_view()``).
- :class:`UniformEvaluator`: equal logits, WDL (0, 1, 0) (benchmarks, tests).
- :class:`ScriptedEvaluator`: test double answering with a function and
  recording every batch it saw.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from chesszero import core

NUM_ACTIONS = int(core.NUM_ACTIONS)
NUM_PLANES = int(core.NUM_PLANES)
ENCODING_METADATA_KEY = "chesszero.encoding_version"

NetworkOutput = tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]


@runtime_checkable
class Evaluator(Protocol):
    """Anything that turns a batch of input planes into policy logits and WDL."""

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        """``planes [N, 52, 8, 8]`` -> ``(policy_logits [N, 1880], wdl [N, 3])``."""
        ...


def check_planes(planes: np.ndarray) -> np.ndarray:
    """The planes as a float32 ``[N, 52, 8, 8]`` array; ValueError otherwise."""
    arr = np.asarray(planes)
    if arr.dtype != np.float32 or arr.ndim != 4 or arr.shape[1:] != (NUM_PLANES, 8, 8):
        raise ValueError(
            f"planes must be float32 [N, {NUM_PLANES}, 8, 8], got {arr.dtype} {list(arr.shape)}"
        )
    return arr


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


class UniformEvaluator:
    """Equal logits for every action and WDL (0, 1, 0): search with no knowledge."""

    def __init__(self, max_batch: int = 1024) -> None:
        self._logits = np.zeros((max_batch, NUM_ACTIONS), np.float32)
        self._wdl = np.tile(np.array([0.0, 1.0, 0.0], np.float32), (max_batch, 1))

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        n = check_planes(planes).shape[0]
        if n > self._logits.shape[0]:
            self.__init__(max_batch=n)
        return self._logits[:n], self._wdl[:n]


ScriptFn = Callable[[np.ndarray], NetworkOutput]


class ScriptedEvaluator:
    """Test double: ``fn(planes) -> (logits, wdl[, moves_left])``, remembering every batch.

    Without ``fn`` it answers like :class:`UniformEvaluator`. ``batches`` holds
    a copy of each batch of planes seen, in order (``record=False`` keeps none).
    """

    def __init__(self, fn: ScriptFn | None = None, *, record: bool = True) -> None:
        self._fn = fn
        self._uniform = UniformEvaluator()
        self._record = record
        self.batches: list[np.ndarray] = []
        self.calls = 0

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        planes = check_planes(planes)
        self.calls += 1
        if self._record:
            self.batches.append(planes.copy())
        if self._fn is None:
            return self._uniform.evaluate(planes)
        out = self._fn(planes)
        if len(out) not in (2, 3):
            raise ValueError(f"a scripted answer is (logits, wdl) or (logits, wdl, moves_left), got {len(out)} arrays")
        return tuple(np.asarray(a, np.float32) for a in out)  # type: ignore[return-value]


class OnnxEvaluator:
    """ONNX Runtime CPU inference of a chesszero network file.

    ``threads`` sets intra-op threads (1 keeps an actor on one core). A file
    carrying ``chesszero.encoding_version`` metadata is refused (ValueError)
    when it differs from the core's encoding version.
    """

    def __init__(self, path: str | Path, *, threads: int = 1) -> None:
        import onnxruntime as ort

        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.path = Path(path)
        if not self.path.is_file():
            raise ValueError(f"ONNX file not found: {self.path}")
        self._session = ort.InferenceSession(
            str(self.path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        meta = self._session.get_modelmeta().custom_metadata_map
        version = meta.get(ENCODING_METADATA_KEY)
        if version is not None and int(version) != int(core.ENCODING_VERSION):
            raise ValueError(
                f"{self.path}: exported for encoding version {version}, the core uses "
                f"{core.ENCODING_VERSION}"
            )
        inputs = [i.name for i in self._session.get_inputs()]
        outputs = [o.name for o in self._session.get_outputs()]
        if inputs != ["planes"] or not {"policy_logits", "wdl"} <= set(outputs):
            raise ValueError(
                f"{self.path}: expected input 'planes' and outputs 'policy_logits', 'wdl'; "
                f"got inputs {inputs}, outputs {outputs}"
            )

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        planes = np.ascontiguousarray(check_planes(planes))
        logits, wdl = self._session.run(["policy_logits", "wdl"], {"planes": planes})
        return logits, wdl


class TorchEvaluator:
    """Evaluates with a torch module returning ``(policy_logits, wdl_logits, ...)``.

    The module is put in eval mode; WDL logits are softmaxed here. Runs under
    ``torch.inference_mode`` on ``device`` (CPU by default). ``threads`` sets
    torch's intra-op thread count, which is process-wide (small CPU batches
    are fastest with 1 thread per actor). With ``moves_left`` the module must
    give the remaining-length head's output (``NetOutput.length``, plies / 400,
    SPEC 5) as its fourth output, and ``evaluate`` returns it in plies as a
    third array (ValueError at construction for a network without one).
    """

    def __init__(
        self, module: Any, *, device: str = "cpu", threads: int | None = None, moves_left: bool = False
    ) -> None:
        import torch

        if threads is not None:
            if threads < 1:
                raise ValueError(f"threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)
        if moves_left and getattr(module, "length_head", None) is None:
            raise ValueError(
                f"moves_left needs a network with a remaining-length head; {type(module).__name__} has none "
                "(a ChessNet built with aux_heads=True has one)"
            )
        self._torch = torch
        self._device = torch.device(device)
        self._module = module.to(self._device).eval()
        self.moves_left = moves_left

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        torch = self._torch
        x = torch.from_numpy(np.ascontiguousarray(check_planes(planes))).to(self._device)
        with torch.inference_mode():
            out = self._module(x)
            logits, wdl_logits = out[0], out[1]
            wdl = torch.softmax(wdl_logits.float(), dim=-1)
            plies = out[3].float() * core.LENGTH_SCALE if self.moves_left else None
        result = (
            logits.float().cpu().numpy().astype(np.float32, copy=False),
            wdl.cpu().numpy().astype(np.float32, copy=False),
        )
        if plies is None:
            return result
        return (*result, plies.reshape(-1).cpu().numpy().astype(np.float32, copy=False))


__all__ = [
    "Evaluator",
    "NetworkOutput",
    "OnnxEvaluator",
    "ScriptedEvaluator",
    "TorchEvaluator",
    "UniformEvaluator",
    "check_planes",
    "softmax",
]
