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
``device`` is a CUDA device ordinal, ignored by the CPU backends; one at or
beyond :func:`visible_gpus` is a :class:`BackendError` naming both numbers.
Which device each self-play actor gets is ``publish.placement``'s rule.
"""

from __future__ import annotations

from chesszero.config.schema import Backend
from chesszero.publish.quant_ops import QuantScheme
from chesszero.publish.runtime import OrtRuntime, Runtime, TorchRuntime

__all__ = [
    "Backend",
    "BackendError",
    "backend_unavailable_reason",
    "check_backend",
    "make_runtime",
    "parse_backend",
    "publication_scheme",
    "visible_gpus",
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


def visible_gpus() -> int:
    """CUDA devices torch sees here (``CUDA_VISIBLE_DEVICES`` applies); 0 without CUDA."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _check_device(backend: Backend, device: int) -> int:
    """The GPU count, after refusing a ``device`` this machine does not have."""
    count = visible_gpus()
    if device < 0:
        raise BackendError(f"inference backend {backend.value!r}: CUDA device {device} is not an ordinal")
    if device >= max(count, 1):  # the torch backend on the CPU takes device 0 (its only device)
        seen = f"{count} GPU(s) are visible (devices 0..{count - 1})" if count else "no GPU is visible"
        raise BackendError(f"inference backend {backend.value!r}: CUDA device {device} requested but {seen}")
    return count


def make_runtime(backend: str | Backend, *, threads: int | None = 1, device: int = 0) -> Runtime:
    """A fresh runtime of ``backend`` (checked first: :class:`BackendError` when it cannot run).

    ``threads``: ONNX Runtime's intra-op threads on the CPU (the torch backend
    leaves torch's process-wide thread count alone); ``device``: CUDA ordinal
    of the GPU backends (ignored by ``ort-cpu``; the torch backend on a
    machine without CUDA accepts only 0, its CPU).
    """
    backend = check_backend(backend)
    if backend is Backend.ORT_CPU:
        return OrtRuntime(threads=threads)
    count = _check_device(backend, device)
    if backend is Backend.TORCH:
        return TorchRuntime(device=f"cuda:{device}" if count else "cpu")
    if backend is Backend.ORT_GPU:
        from chesszero.publish.ort_gpu import OrtGpuRuntime

        return OrtGpuRuntime(device=device)
    from chesszero.publish.tensorrt_runtime import TensorRtRuntime

    return TensorRtRuntime(device=device)


def publication_scheme(backend: str | Backend) -> QuantScheme:
    """The INT8 grids a publication gated for ``backend`` uses."""
    backend = parse_backend(backend)
    return QuantScheme.TENSORRT if backend in (Backend.ORT_GPU, Backend.TENSORRT) else QuantScheme.CPU
