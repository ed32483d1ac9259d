"""Search: native PUCT (or Gumbel-root) trees driven in batches by an evaluator.

- ``evaluators``: the ``Evaluator`` protocol and its ONNX Runtime, PyTorch,
  uniform and scripted implementations.
- ``analysis``: ``analyse(game, evaluator, visits=...)`` and ``BatchSearch``.
- ``pipeline``: the prepare / evaluate / submit loop with double buffering.

The tree itself (selection, expansion, backup, noise, forced playouts,
pruning, subtree reuse) is C++ (``cpp/search``); its options are
``SearchOptions`` (defaults: self-play, SPEC 6; ``SearchOptions.evaluation()``).
"""

from chesszero.search.analysis import (
    AnalysisResult,
    BatchSearch,
    MoveChoice,
    MoveChoiceOptions,
    MoveStats,
    RootRule,
    SearchOptions,
    analyse,
    quiescent_material,
    root_rule,
    search_options,
)
from chesszero.search.evaluators import (
    Evaluator,
    OnnxEvaluator,
    ScriptedEvaluator,
    TorchEvaluator,
    UniformEvaluator,
)
from chesszero.search.pipeline import BatchPipeline

__all__ = [
    "AnalysisResult",
    "BatchPipeline",
    "BatchSearch",
    "Evaluator",
    "MoveChoice",
    "MoveChoiceOptions",
    "MoveStats",
    "OnnxEvaluator",
    "RootRule",
    "ScriptedEvaluator",
    "SearchOptions",
    "TorchEvaluator",
    "UniformEvaluator",
    "analyse",
    "quiescent_material",
    "root_rule",
    "search_options",
]
