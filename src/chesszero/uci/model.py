"""Where the UCI engine's evaluator comes from, and loading it off the main thread.

An ``EvaluatorSource`` builds an evaluator for a number of inference threads:

- ``source_from_path(path, backend)``: an ONNX artifact loaded by
  ``publish.loading.load_evaluator`` in that inference backend (published artifacts through the
  publish package; plain ONNX networks with a warning; another encoding
  version refused).
- ``source_from_evaluator(evaluator)``: an evaluator object (tests, embedding);
  ``Threads`` has no effect on it.
- ``uniform_source()``: ``search.UniformEvaluator``, search with no network
  knowledge (what ``run_uci`` uses when no model is given; announced as such).

``PendingEvaluator`` builds one in a background thread, so the engine
answers ``uci`` at once and ``isready``/``go`` wait only for what is left.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from chesszero import core
from chesszero.publish.backends import check_backend
from chesszero.publish.loading import load_evaluator
from chesszero.search.evaluators import Evaluator, UniformEvaluator


@dataclass(frozen=True)
class EvaluatorSource:
    """Builds the engine's evaluator; ``label`` names it in ``id name``."""

    label: str
    build: Callable[[int], Evaluator]
    uses_threads: bool
    warnings: list[str] = field(default_factory=list)
    """Remarks collected while building (sent as ``info string``)."""


def check_onnx_signature(file: Path) -> None:
    """A quick check at startup (``onnx`` only, no torch or runtime session):
    ValueError naming `file` unless it is an ONNX network taking planes
    ``[N, NUM_PLANES, 8, 8]`` to two outputs ``[N, NUM_ACTIONS]`` and ``[N, 3]``.
    The full validation (metadata, encoding version) runs with the load."""
    import onnx

    try:
        model = onnx.load(str(file), load_external_data=False)
    except Exception as error:  # protobuf raises its own types for junk
        raise ValueError(f"{file}: not an ONNX model ({type(error).__name__}: {error})") from error

    def dims(value: onnx.ValueInfoProto) -> list[int | str]:
        shape = value.type.tensor_type.shape.dim
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in shape]

    inputs = [v for v in model.graph.input if v.name not in {i.name for i in model.graph.initializer}]
    want_in = [int(core.NUM_PLANES), 8, 8]
    if len(inputs) != 1 or dims(inputs[0])[1:] != want_in:
        raise ValueError(f"{file}: expected one input [N, {', '.join(map(str, want_in))}], "
                         f"got {[dims(v) for v in inputs]}")
    outs = [dims(v)[1:] for v in model.graph.output]
    if outs != [[int(core.NUM_ACTIONS)], [3]]:
        raise ValueError(f"{file}: expected outputs [N, {core.NUM_ACTIONS}] and [N, 3], "
                         f"got {[dims(v) for v in model.graph.output]}")


def source_from_path(path: str | Path, backend: str = "ort-cpu") -> EvaluatorSource:
    """An ONNX artifact file (module docstring) run by inference `backend`;
    ValueError when the backend cannot run here, or the file does not exist
    or is not an ONNX network of the right signature."""
    check_backend(backend)
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"model file not found: {str(path)!r}")
    check_onnx_signature(file)
    warnings: list[str] = []
    return EvaluatorSource(
        label=file.name,
        build=lambda threads: load_evaluator(file, backend=backend, threads=threads, warnings=warnings),
        uses_threads=True,
        warnings=warnings,
    )


def source_from_evaluator(evaluator: Evaluator, label: str | None = None) -> EvaluatorSource:
    """An existing evaluator object, used as is."""
    if not callable(getattr(evaluator, "evaluate", None)):
        raise TypeError(f"{type(evaluator).__name__} has no evaluate(planes) method")
    return EvaluatorSource(
        label=label or type(evaluator).__name__, build=lambda _: evaluator, uses_threads=False
    )


def uniform_source() -> EvaluatorSource:
    """Uniform policy and value: tree search without a network."""
    return EvaluatorSource(
        label="uniform, no network",
        build=lambda _: UniformEvaluator(),
        uses_threads=False,
        warnings=["no model given: searching with a uniform evaluator (no network knowledge)"],
    )


class PendingEvaluator:
    """An evaluator being built by ``source`` in a background thread."""

    def __init__(self, source: EvaluatorSource, threads: int) -> None:
        self.source = source
        self.threads = threads
        self._done = threading.Event()
        self._value: Evaluator | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._load, name="cz-uci-load", daemon=True).start()

    def _load(self) -> None:
        try:
            self._value = self.source.build(self.threads)
        except Exception as error:  # reported to the GUI by result(); never kills the engine
            self._error = error
        finally:
            self._done.set()

    def result(self) -> Evaluator:
        """The evaluator, once built; re-raises the build's error."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


__all__ = [
    "EvaluatorSource",
    "PendingEvaluator",
    "source_from_evaluator",
    "source_from_path",
    "uniform_source",
]
