"""chesszero: AlphaZero-style chess self-play research system with a native C++ core.

Subpackages: ``core`` (native rules and encoding), ``search``/``selfplay`` (MCTS
and actors), ``model``/``train``/``replay`` (learning), ``publish`` and
``evaluate`` (artifacts and ladders), ``config`` (typed recipe).
"""

__version__ = "0.1.0"
