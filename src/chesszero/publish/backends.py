"""Inference backends by name (``inference.backend``, ``--backend``): can it run here, build it.

=============  ============================================================  =================
name           runtime                                                       INT8 scheme
=============  ============================================================  =================
``ort-cpu``    :class:`~chesszero.publish.runtime.OrtRuntime`                ``cpu``
``torch``      :class:`~chesszero.publish.runtime.TorchRuntime` on           ``cpu``
               ``cuda:K`` when CUDA is visible (autocast, CUDA graphs),
               else on the CPU in float32
``ort-gpu``    :class:`~chesszero.publish.ort_gpu.OrtGpuRuntime`             ``tensorrt``
``tensorrt``   :class:`~chesszero.publish.tensorrt_runtime.TensorRtRuntime`  ``tensorrt``
=============  ============================================================  =================

:func:`check_backend` is what a campaign calls at start and the command
line before loading anything: an unknown name or a backend this machine
cannot run is a :class:`BackendError` (a ``ValueError``: exit status 2 on
the command line) that names the backend and says what is missing -- never
a silent fallback to another runtime. :func:`make_runtime` builds the
runtime; :func:`publication_scheme` is the integer grid a publication for
that backend must use (TensorRT accepts only signed int8 activations).
``device`` is a CUDA device ordinal, ignored by the CPU backends;
:func:`actor_device` spreads self-play actors over the visible GPUs.
"""

from __future__ import annotations

from chesszero.config.schema import Backend
from chesszero.publish.quant_ops import QuantScheme
from chesszero.publish.runtime import OrtRuntime, Runtime, TorchRuntime

__all__ = [
    "Backend",
    "BackendError",
    "actor_device",
    "backend_unavailable_reason",
    "check_backend",
    "make_runtime",
    "parse_backend",
    "publication_scheme",
]


class BackendError(ValueError):
    """An inference backend that is unknown or cannot run on this machine."""


def parse_backend(name: str | Backend) -> Backend:
    """The backend called ``name``; :class:`BackendError` listing the known names otherwise."""
    try:
        return Backend(name)
    except ValueError:
        known = ", ".join(b.value for b in Backend)
        raise BackendError(f"unknown inference backend {name!r} (known: {known})") from None


def backend_unavailable_reason(backend: str | Backend) -> str | None:
    """Why ``backend`` cannot run here, or ``None`` when it can."""
    backend = parse_backend(backend)
    if backend is Backend.ORT_CPU:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            return "onnxruntime is not installed (pip install -e '.[learn]')"
        return None
    if backend is Backend.TORCH:
        return None  # torch is a dependency of publication itself; CPU when no GPU is visible
    if backend is Backend.ORT_GPU:
        from chesszero.publish.ort_gpu import ort_gpu_unavailable_reason

        return ort_gpu_unavailable_reason()
    from chesszero.publish.tensorrt_runtime import tensorrt_unavailable_reason

    return tensorrt_unavailable_reason()


def check_backend(backend: str | Backend) -> Backend:
    """``backend`` parsed and runnable here, else :class:`BackendError` saying why not."""
    parsed = parse_backend(backend)
    reason = backend_unavailable_reason(parsed)
    if reason is not None:
        raise BackendError(f"inference backend {parsed.value!r} cannot run on this machine: {reason}")
    return parsed


def _cuda_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def actor_device(actor: int) -> int:
    """CUDA device of self-play actor ``actor``: round robin over the visible GPUs
    (so ``selfplay.actors / GPUs`` actors share each one); 0 without a GPU."""
    count = _cuda_count()
    return actor % count if count else 0


def make_runtime(backend: str | Backend, *, threads: int | None = 1, device: int = 0) -> Runtime:
    """A fresh runtime of ``backend`` (checked first: :class:`BackendError` when it cannot run).

    ``threads``: ONNX Runtime's intra-op threads on the CPU (the torch backend
    leaves torch's process-wide thread count alone); ``device``: CUDA ordinal.
    """
    backend = check_backend(backend)
    if backend is Backend.ORT_CPU:
        return OrtRuntime(threads=threads)
    if backend is Backend.TORCH:
        return TorchRuntime(device=f"cuda:{device}" if _cuda_count() else "cpu")
    if backend is Backend.ORT_GPU:
        from chesszero.publish.ort_gpu import OrtGpuRuntime

        return OrtGpuRuntime(device=device)
    from chesszero.publish.tensorrt_runtime import TensorRtRuntime

    return TensorRtRuntime(device=device)


def publication_scheme(backend: str | Backend) -> QuantScheme:
    """The INT8 grids a publication gated for ``backend`` uses."""
    backend = parse_backend(backend)
    return QuantScheme.TENSORRT if backend in (Backend.ORT_GPU, Backend.TENSORRT) else QuantScheme.CPU
