"""The NNUE student of the alpha-beta engine: distilled from a teacher
campaign, exported to the ``.nnue`` file the native core loads (docs/nnue.md).

Modules (this package imports nothing heavy on import):

- ``quant``: the contract's sizes, ranges, quantisation and the numpy
  integer reference of the evaluation (section 3).
- ``fileformat``: write and read ``.nnue`` files (section 5, FNV-1a checked).
- ``model``, ``train``: the PyTorch student and its resumable trainer.
- ``native``: the only user of the core's NNUE and alpha-beta bindings.
- ``positions``, ``searchgames``, ``labels``: training positions (teacher
  games, alpha-beta games) and the teacher's labels.
- ``stages``, ``build``, ``report``: ``chesszero nnue build`` (resumable
  stage files, summary, MLflow).
- ``paths``: ``latest_student(root)``, the default student of other tools.
"""
