"""UCI engine: play the network in chess GUIs and test harnesses.

Modules:

- ``protocol``: commands parsed into dataclasses, replies formatted; the
  value-to-centipawn and WDL conventions of ``info`` lines.
- ``timeman``: visit and time budgets of a ``go`` command.
- ``model``: where the evaluator comes from (artifact, ONNX file, object).
- ``job``: one search on a background thread, its ``info`` and ``bestmove``.
- ``engine``: the command loop, options and ``run_uci`` (``chesszero uci``).
"""

from chesszero.uci.engine import EngineSettings, UciEngine, run_uci

__all__ = ["EngineSettings", "UciEngine", "run_uci"]
