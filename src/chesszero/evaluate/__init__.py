"""Evaluation: matches, ladder, Elo and the promotion gate (SPEC 10).

Modules (import them directly; this package imports nothing eagerly, so that
``elo``/``gate`` work without the native core and ``python -m
chesszero.evaluate.ladder`` runs cleanly):

- ``elo``: Elo from paired results, pentanomial bootstrap intervals, bounds.
- ``players``: the batched ``Player`` protocol; random, greedy, Stockfish.
- ``engine_player``: the network as a ``Player`` (searched or policy-only),
  ``SlotSearch`` (stoppable slot-addressed search); model files load
  through ``chesszero.publish.loading.load_evaluator``.
- ``match``: paired matches refereed by ``chesszero.core.Game``; ``MatchResult``.
- ``pgn``: PGN text of match games.
- ``openings``: the opening-suite format, loading, checksums.
- ``rating_fit``: maximum-likelihood (Bradley-Terry) ratings with an anchor.
- ``ladder``: rungs, calibration, ``LadderTable`` JSON, rating a model; CLI.
- ``progress``: live ``rich`` progress of a calibration.
- ``gate``: the candidate-promotion state machine.
"""
