"""The one way from a model file to an evaluator (campaign stages, matches, UCI, CLI).

``load_evaluator(path, backend=...)``: a published artifact is validated by
``load_artifact`` (metadata, encoding version, input and outputs) and built
by the runtime of ``backend`` (``publish.backends``: ``ort-cpu``, the
default, ``torch``, ``ort-gpu``, ``tensorrt``); an artifact for another
encoding version is refused, and so is a backend this machine cannot run
or a CUDA ``device`` it does not have (``BackendError``, before the file is
read: the runtime is built first). With ``plain_onnx=True`` (the
default for files a user names) an ONNX file without chesszero metadata but
with the right signature is accepted through ``search.OnnxEvaluator`` with
a remark in ``warnings`` -- for ``ort-cpu`` only, since the other backends
need what the metadata records (the torch deployment state, the INT8
scheme); the campaign's own stages pass ``plain_onnx=False``: they only
ever run published artifacts.
"""

from __future__ import annotations

from pathlib import Path

from chesszero.config.schema import Backend
from chesszero.publish.artifact import ArtifactError, EncodingVersionError, load_artifact
from chesszero.publish.backends import check_backend, make_runtime
from chesszero.search.evaluators import Evaluator, OnnxEvaluator

__all__ = ["load_evaluator"]


def load_evaluator(path: str | Path, *, backend: str | Backend = Backend.ORT_CPU, threads: int = 1,
                   device: int = 0, plain_onnx: bool = True, warnings: list[str] | None = None) -> Evaluator:
    """The network in the ONNX file `path` run by `backend` (module docstring);
    `device` is the CUDA ordinal of the GPU backends; remarks go to `warnings`."""
    backend = check_backend(backend)
    runtime = make_runtime(backend, threads=threads, device=device)
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model file not found: {str(path)!r}")
    try:
        artifact = load_artifact(path)
    except EncodingVersionError:
        raise
    except ArtifactError as error:
        if not plain_onnx:
            raise
        if backend is not Backend.ORT_CPU:
            raise ArtifactError(f"{error}; a plain ONNX network runs only on the ort-cpu backend, "
                                f"not {backend.value!r}") from error
        try:
            evaluator = OnnxEvaluator(path, threads=threads)
        except Exception as fallback:  # ORT and onnx raise their own types for junk files
            raise ValueError(f"{error}; as a plain ONNX network: {fallback}") from fallback
        if warnings is not None:
            warnings.append(f"{error}; loaded as a plain ONNX network")
        return evaluator
    return runtime.build(artifact)
