"""The one way from a model file to an evaluator (campaign stages, matches, UCI, CLI).

``load_evaluator(path)``: a published artifact is validated by
``load_artifact`` (metadata, encoding version, input and outputs) and run by
``OrtRuntime``; an artifact for another encoding version is refused. With
``plain_onnx=True`` (the default for files a user names) an ONNX file
without chesszero metadata but with the right signature is accepted through
``search.OnnxEvaluator`` with a remark in ``warnings``; the campaign's own
stages pass ``plain_onnx=False``: they only ever run published artifacts.
"""

from __future__ import annotations

from pathlib import Path

from chesszero.publish.artifact import ArtifactError, EncodingVersionError, load_artifact
from chesszero.publish.runtime import OrtRuntime
from chesszero.search.evaluators import Evaluator, OnnxEvaluator

__all__ = ["load_evaluator"]


def load_evaluator(path: str | Path, *, threads: int = 1, plain_onnx: bool = True,
                   warnings: list[str] | None = None) -> Evaluator:
    """The network in the ONNX file `path` (module docstring); remarks go to `warnings`."""
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
        try:
            evaluator = OnnxEvaluator(path, threads=threads)
        except Exception as fallback:  # ORT and onnx raise their own types for junk files
            raise ValueError(f"{error}; as a plain ONNX network: {fallback}") from fallback
        if warnings is not None:
            warnings.append(f"{error}; loaded as a plain ONNX network")
        return evaluator
    return OrtRuntime(threads=threads).build(artifact)
