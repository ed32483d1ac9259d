"""ONNX Runtime on a GPU: the CUDA execution provider, TensorRT's first when listed.

Verification status: **not run** -- the development machines have neither
``onnxruntime-gpu`` nor a GPU. Written against ONNX Runtime's documented
provider options (``device_id``; ``trt_int8_enable``,
``trt_engine_cache_enable``/``trt_engine_cache_path``). What is checked
everywhere is the refusal: without the CUDA provider, building raises
:class:`OrtGpuUnavailable` naming what is missing.

ONNX Runtime quietly runs a session on the CPU when a listed GPU provider
fails to load (missing CUDA or cuDNN libraries); :meth:`OrtGpuRuntime.build`
therefore checks the providers the session really got and refuses one
without CUDA, so a campaign configured for the GPU never runs on the CPU
unnoticed. Single nodes that the GPU providers do not implement still run
on the CPU provider inside the session (ONNX Runtime's graph partitioning).
"""

from __future__ import annotations

from pathlib import Path

from chesszero.publish.artifact import Artifact, ArtifactError
from chesszero.publish.runtime import OrtRuntime, OrtSession, _as_artifact

__all__ = ["OrtGpuRuntime", "OrtGpuUnavailable", "ort_gpu_unavailable_reason"]

CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"


class OrtGpuUnavailable(RuntimeError):
    """ONNX Runtime cannot run on a GPU here."""


def ort_gpu_unavailable_reason() -> str | None:
    """Why ONNX Runtime cannot use a GPU here, or ``None`` when it can."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime is not installed"
    providers = ort.get_available_providers()
    if CUDA not in providers:
        return (f"ONNX Runtime {ort.__version__} here offers {providers}, not {CUDA}: install "
                "onnxruntime-gpu in place of onnxruntime (pip install -e '.[gpu]')")
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device is visible (torch.cuda.is_available() is False)"
    return None


class OrtGpuRuntime(OrtRuntime):
    """ONNX Runtime with the CUDA provider on device ``device`` (see the module docstring).

    ``tensorrt``: put ONNX Runtime's TensorRT provider first when it is
    available (INT8 from the artifact's QDQ nodes; engines cached under
    ``cache_dir`` when given).
    """

    name = "onnxruntime-gpu"

    def __init__(self, *, device: int = 0, tensorrt: bool = True, cache_dir: str | Path | None = None) -> None:
        super().__init__(threads=1)
        reason = ort_gpu_unavailable_reason()
        if reason is not None:
            raise OrtGpuUnavailable(f"ONNX Runtime GPU backend unavailable: {reason}")
        import onnxruntime as ort

        self.device = device
        self.providers: list[tuple[str, dict[str, str]]] = []
        if tensorrt and TENSORRT in ort.get_available_providers():
            options = {"device_id": str(device), "trt_int8_enable": "True", "trt_fp16_enable": "True"}
            if cache_dir is not None:
                options |= {"trt_engine_cache_enable": "True", "trt_engine_cache_path": str(cache_dir)}
            self.providers.append((TENSORRT, options))
        self.providers.append((CUDA, {"device_id": str(device)}))
        self.providers.append(("CPUExecutionProvider", {}))

    def build(self, artifact: Artifact | str | Path) -> OrtSession:
        import onnxruntime as ort

        artifact = _as_artifact(artifact)
        try:
            session = ort.InferenceSession(str(artifact.path), self.session_options(),
                                           providers=[name for name, _ in self.providers],
                                           provider_options=[options for _, options in self.providers])
        except Exception as error:  # ORT raises its own exception types for bad graphs
            raise ArtifactError(f"{artifact.path}: ONNX Runtime (GPU) cannot load it: {error}") from error
        if CUDA not in session.get_providers():
            raise OrtGpuUnavailable(f"{artifact.path}: ONNX Runtime fell back to {session.get_providers()} "
                                    "(CUDA provider failed to load: check the CUDA and cuDNN libraries)")
        return OrtSession(artifact, session)
