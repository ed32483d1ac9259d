"""TensorRT runtime: one engine template, refitted with new weights at each publication.

Verification status -- read this first.  This module has **not** been run
against TensorRT: the development machines have neither the ``tensorrt``
package nor a GPU.  It was written against the TensorRT 10 Python API
documentation (``Builder``/``OnnxParser``/``BuilderFlag.REFIT``,
``Refitter`` + ``OnnxParserRefitter.refit_from_file``, the name-based
``set_input_shape``/``set_tensor_address``/``execute_async_v3`` execution
API).  What *is* verified here, on CPU with ONNX Runtime, are the pure-ONNX
template transforms (:mod:`chesszero.publish.qdq`) and the refusal paths (no package / no CUDA -> :class:`TensorRtUnavailable`;
CPU-scheme INT8 artifacts refused).  Whatever TensorRT does, every engine
is scored by the fidelity gate before it is activated: a bad build or refit
is rejected, not served.

Design (paper 5.3 and 6.2):

- The first artifact becomes the *template*: its ONNX graph is canonicalised
  (every QuantizeLinear/DequantizeLinear node gets its own named scale and
  zero-point initializers, constants become initializers, so the refitter can
  address each by name) and its scale values are made **pairwise distinct**
  before building, so TensorRT cannot compile in optimisations that rely on
  two scales being equal (the paper's silent refit bug: equal template
  scales + optimisation level >= 4 + a refit with unequal scales gave KL 1.05
  while TensorRT reported success).  The builder optimisation level defaults
  to 3 for the same reason.  The engine is built with ``BuilderFlag.REFIT``.
- Two engines are deserialised from the one plan (double buffering).  ``build``
  refits the engine that is *not* serving with the artifact's canonical graph;
  ``activate`` swaps.  Refitting never touches the serving engine, and the
  session that was gated is the one that serves (no second refit).
- A topology change (new network size) builds a new template.  If an
  initializer changed but TensorRT reports it as not refittable, the staging
  engine is rebuilt from this artifact instead (logged).
- INT8 artifacts must use :attr:`QuantScheme.TENSORRT` (signed int8, zero
  point 0 everywhere, which is all TensorRT accepts).
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from chesszero.publish.artifact import INPUT_NAME, OUTPUT_NAMES, Artifact, ArtifactError, Precision
from chesszero.publish.qdq import canonical_qdq_model, distinct_scale_template
from chesszero.publish.quant_ops import QuantScheme
from chesszero.publish.runtime import Runtime, _as_artifact, _check_planes, _to_tensor

__all__ = [
    "TensorRtRuntime",
    "TensorRtSession",
    "TensorRtUnavailable",
    "tensorrt_unavailable_reason",
]

log = logging.getLogger(__name__)


class TensorRtUnavailable(RuntimeError):
    """TensorRT cannot run here (package missing, too old, or no CUDA device)."""


def tensorrt_unavailable_reason() -> str | None:
    """Why TensorRT cannot be used on this machine, or ``None`` when it can."""
    try:
        import tensorrt as trt
    except ImportError:
        return "the 'tensorrt' Python package is not installed"
    major = int(str(trt.__version__).split(".")[0])
    if major < 10:
        return f"TensorRT {trt.__version__} found; 10.x or newer is required (OnnxParserRefitter)"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device is available to torch"
    return None


def _initializer_digests(model: onnx.ModelProto) -> dict[str, str]:
    return {i.name: hashlib.sha256(i.SerializeToString()).hexdigest() for i in model.graph.initializer}


def _topology_key(model: onnx.ModelProto) -> str:
    """Hash of everything but initializer values (refit needs an identical topology)."""
    digest = hashlib.sha256()
    for node in model.graph.node:
        digest.update(f"{node.op_type}|{list(node.input)}|{list(node.output)};".encode())
    for init in model.graph.initializer:
        digest.update(f"{init.name}:{init.data_type}:{list(init.dims)};".encode())
    return digest.hexdigest()


# ----------------------------------------------------------------- engines


@dataclass(frozen=True)
class _BuildOptions:
    opt_batch: int
    max_batch: int
    fp16: bool
    optimization_level: int
    workspace_bytes: int


class _EngineSlot:
    """One deserialised engine with its execution context, stream and refit counter."""

    def __init__(
        self, trt: Any, logger: Any, plan: bytes, device: Any, max_batch: int, values: dict[str, str]
    ) -> None:
        import torch

        self.trt, self.logger, self.device, self.max_batch = trt, logger, device, max_batch
        self.runtime = trt.Runtime(logger)  # kept alive as long as its engine
        self.engine = self.runtime.deserialize_cuda_engine(plan)
        if self.engine is None:
            raise RuntimeError("TensorRT could not deserialise the engine plan")
        self.context = self.engine.create_execution_context()
        self.stream = torch.cuda.Stream(device=device)
        self.refittable = set(trt.Refitter(self.engine, logger).get_all_weights())
        self.values = values
        """Digest per initializer of the weights the engine currently holds."""
        self.generation = 0
        self.lock = threading.Lock()

    def refit(self, onnx_path: Path, values: dict[str, str]) -> None:
        refitter = self.trt.Refitter(self.engine, self.logger)
        parser = self.trt.OnnxParserRefitter(refitter, self.logger)
        with self.lock:
            if not parser.refit_from_file(str(onnx_path)):
                errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
                raise RuntimeError(f"TensorRT refit from {onnx_path} failed: {errors}")
            if not refitter.refit_cuda_engine():
                raise RuntimeError(f"TensorRT refit incomplete, missing {refitter.get_missing_weights()}")
            self.values = values
            self.generation += 1

    def run(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import torch

        n = len(planes)
        with self.lock, torch.cuda.device(self.device), torch.cuda.stream(self.stream):
            x = _to_tensor(planes).to(self.device, non_blocking=True)
            policy = torch.empty((n, 1880), dtype=torch.float32, device=self.device)
            wdl = torch.empty((n, 3), dtype=torch.float32, device=self.device)
            self.context.set_input_shape(INPUT_NAME, tuple(x.shape))
            for name, tensor in ((INPUT_NAME, x), (OUTPUT_NAMES[0], policy), (OUTPUT_NAMES[1], wdl)):
                self.context.set_tensor_address(name, tensor.data_ptr())
            if not self.context.execute_async_v3(self.stream.cuda_stream):
                raise RuntimeError("TensorRT execution failed")
            self.stream.synchronize()
            return policy.cpu().numpy(), wdl.cpu().numpy()


class TensorRtSession:
    """A built (refitted) engine for one artifact; invalid once its engine is refitted again."""

    def __init__(self, slot: _EngineSlot, artifact: Artifact) -> None:
        self.slot = slot
        self.generation = slot.generation
        self.artifact: Artifact | None = artifact

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.slot.generation != self.generation:
            raise RuntimeError("this TensorRT session's engine has been refitted for a later artifact")
        planes = _check_planes(planes)
        parts = [self.slot.run(planes[i : i + self.slot.max_batch])
                 for i in range(0, len(planes), self.slot.max_batch)]
        return np.concatenate([p for p, _ in parts]), np.concatenate([w for _, w in parts])


class TensorRtRuntime(Runtime):
    """TensorRT on one CUDA device, template engine + refit (see the module docstring)."""

    name = "tensorrt"

    def __init__(
        self,
        *,
        device: int = 0,
        opt_batch: int = 256,
        max_batch: int = 1024,
        fp16: bool = True,
        optimization_level: int = 3,
        workspace_bytes: int = 1 << 30,
        cache_dir: str | Path | None = None,
    ) -> None:
        super().__init__()
        reason = tensorrt_unavailable_reason()
        if reason is not None:
            raise TensorRtUnavailable(f"TensorRT runtime unavailable: {reason}")
        import tensorrt as trt
        import torch

        if not 1 <= opt_batch <= max_batch:
            raise ValueError(f"need 1 <= opt_batch <= max_batch, got {opt_batch}, {max_batch}")
        self.trt = trt
        self.logger = trt.Logger(trt.Logger.WARNING)
        self.device = torch.device("cuda", device)
        self.options = _BuildOptions(opt_batch, max_batch, fp16, optimization_level, workspace_bytes)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._topology: str | None = None
        self._slots: list[_EngineSlot] = []
        self._serving: _EngineSlot | None = None

    def _build_plan(self, model: onnx.ModelProto, *, int8: bool) -> bytes:
        trt, opts = self.trt, self.options
        data = model.SerializeToString()
        key = hashlib.sha256(data + repr((opts, int8, trt.__version__)).encode()).hexdigest()[:32]
        cached = self.cache_dir / f"{key}.plan" if self.cache_dir is not None else None
        if cached is not None and cached.exists():
            return cached.read_bytes()
        builder = trt.Builder(self.logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, self.logger)
        if not parser.parse(data):
            errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
            raise RuntimeError(f"TensorRT cannot parse the ONNX template: {errors}")
        config = builder.create_builder_config()
        config.set_flag(trt.BuilderFlag.REFIT)
        if opts.fp16:
            config.set_flag(trt.BuilderFlag.FP16)
        if int8:
            config.set_flag(trt.BuilderFlag.INT8)
        config.builder_optimization_level = opts.optimization_level
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, opts.workspace_bytes)
        profile = builder.create_optimization_profile()
        shape = (52, 8, 8)
        profile.set_shape(INPUT_NAME, (1, *shape), (opts.opt_batch, *shape), (opts.max_batch, *shape))
        config.add_optimization_profile(profile)
        plan = builder.build_serialized_network(network, config)
        if plan is None:
            raise RuntimeError("TensorRT engine build failed (see the TensorRT log)")
        plan_bytes = bytes(plan)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_bytes(plan_bytes)
        return plan_bytes

    def _new_slots(self, canonical: onnx.ModelProto, *, int8: bool, count: int) -> list[_EngineSlot]:
        template = distinct_scale_template(canonical) if int8 else canonical
        plan = self._build_plan(template, int8=int8)
        values = _initializer_digests(template)
        return [_EngineSlot(self.trt, self.logger, plan, self.device, self.options.max_batch, values)
                for _ in range(count)]

    def build(self, artifact: Artifact | str | Path) -> TensorRtSession:
        import torch

        # TensorRT builds, deserialises and refits on the current CUDA device: make it ours
        # (an actor placed on cuda:1 would otherwise get an engine on cuda:0).
        with torch.cuda.device(self.device):
            return self._build_on_device(_as_artifact(artifact))

    def _build_on_device(self, artifact: Artifact) -> TensorRtSession:
        meta = artifact.metadata
        if artifact.moves_left:
            raise ArtifactError(
                f"{artifact.path}: the TensorRT runtime does not serve the moves_left output yet "
                "(publish without search.moves_left, or use ONNX Runtime)"
            )
        int8 = meta.precision is Precision.INT8
        if int8 and meta.quant_scheme != QuantScheme.TENSORRT.value:
            raise ArtifactError(
                f"{artifact.path}: INT8 artifact uses quant scheme {meta.quant_scheme!r}; TensorRT "
                f"needs {QuantScheme.TENSORRT.value!r} (publish with PublishSettings(scheme=TENSORRT))"
            )
        canonical = canonical_qdq_model(onnx.load(str(artifact.path)))
        topology = _topology_key(canonical)
        if topology != self._topology:
            log.info("TensorRT: building a new engine template from %s", artifact.path)
            self._slots = self._new_slots(canonical, int8=int8, count=2)
            self._topology, self._serving = topology, None
        slot = next(s for s in self._slots if s is not self._serving)
        values = _initializer_digests(canonical)
        changed = {name for name, digest in values.items() if slot.values.get(name) != digest}
        if not changed <= slot.refittable:
            log.warning("TensorRT: changed initializers %s are not refittable; rebuilding the staging "
                        "engine", sorted(changed - slot.refittable)[:5])
            index = self._slots.index(slot)
            slot = self._slots[index] = self._new_slots(canonical, int8=int8, count=1)[0]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "canonical.onnx"
            onnx.save(canonical, str(path))
            slot.refit(path, values)
        return TensorRtSession(slot, artifact)

    def activate(self, session: Any) -> None:
        if not isinstance(session, TensorRtSession) or session.slot not in self._slots:
            raise ValueError("activate() needs a session built by this TensorRT runtime")
        super().activate(session)
        self._serving = session.slot
