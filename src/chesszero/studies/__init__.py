"""Failure studies (issue 12): the paper's chapter-6 failures and the draw cycle, reproduced.

A study is an experiment configuration over the project's own components
(actors, replay, trainer, publication and its gate, matches, campaigns) plus
its analysis; it writes ``reports/failures/<name>.md`` (+ ``.json`` and
figures under ``reports/failures/<name>/``) and logs one MLflow parent run.
``reports/failures/index.md`` is generated from the studies' JSON files.

- ``late-game-targets`` (paper 6.1): :mod:`chesszero.studies.late_targets`
- ``refit-drift`` (paper 6.2): :mod:`chesszero.studies.refit_drift`
- ``promotion-loss`` (paper 6.3): :mod:`chesszero.studies.promotion_loss`
- ``draw-cycle`` (reference 004): :mod:`chesszero.studies.draw_cycle`

Run one with :func:`chesszero.studies.run.run_study` or ``chesszero study NAME [--quick]``.
"""
