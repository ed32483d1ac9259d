"""The recipe's search section as native search options, in one place.

Self-play and evaluation share the tree rules (first-play urgency, discount,
proven results, twofold repetitions inside the tree, the root rule unless
``search.eval_root`` names another for evaluation); they differ as SPEC 6
says: c_puct, root noise and forced playouts in self-play only, and the draw
score (contempt for the side ahead) is a self-play lever only.
"""

from __future__ import annotations

from typing import Any

from chesszero.config import Config


def selfplay_search(cfg: Config) -> dict[str, Any]:
    """``SearchOptions`` fields of the self-play actors."""
    s = cfg.search
    return {
        "c_puct": s.c_puct_selfplay,
        "fpu_reduction": s.fpu_reduction,
        "dirichlet_epsilon": s.dirichlet_epsilon,
        "dirichlet_alpha": s.dirichlet_alpha,
        "forced_playout_k": s.forced_playout_k,
        "discount": s.discount,
        "subtree_retention": s.subtree_retention,
        "leaves_per_tree": s.leaves_per_tree,
        "proven_results": s.proven_results,
        "twofold_draws": s.twofold_draws,
        "draw_score": s.draw_score,
        "root": s.root.value,
        "gumbel_considered": s.gumbel.considered,
        "gumbel_c_visit": s.gumbel.c_visit,
        "gumbel_c_scale": s.gumbel.c_scale,
        **moves_left_fields(cfg),
    }


def search_overrides(items: list[str]) -> dict[str, Any]:
    """``["root=puct"]`` -> ``{"search.root": "puct"}``: ``KEY=YAML`` changes of the
    recipe's search section as dotted overrides; ConfigError names a malformed item."""
    from chesszero.config.loader import parse_overrides

    return {f"search.{key}": value for key, value in parse_overrides(items).items()}


def moves_left_fields(cfg: Config) -> dict[str, float]:
    """The moves-left utility's ``SearchOptions`` fields (self-play and evaluation alike)."""
    m = cfg.search.moves_left
    return {
        "moves_left_slope": m.slope,
        "moves_left_cap": m.cap,
        "moves_left_linear": m.linear,
        "moves_left_quadratic": m.quadratic,
    }


def evaluation_search(cfg: Config) -> Any:
    """``SearchOptions`` of evaluation and promotion matches (no noise, no
    forced playouts, no draw score: the network and its search alone), at the
    root rule ``search.eval_root`` when the recipe sets one, else ``search.root``."""
    from chesszero.search import SearchOptions, root_rule

    s = cfg.search
    options = SearchOptions.evaluation()
    options.c_puct = s.c_puct_eval
    options.fpu_reduction = s.fpu_reduction
    options.discount = s.discount
    options.subtree_retention = s.subtree_retention
    options.proven_results = s.proven_results
    options.twofold_draws = s.twofold_draws
    options.root = root_rule((s.eval_root or s.root).value)
    options.gumbel_considered = s.gumbel.considered
    options.gumbel_c_visit = s.gumbel.c_visit
    options.gumbel_c_scale = s.gumbel.c_scale
    for key, value in moves_left_fields(cfg).items():
        setattr(options, key, value)
    options.validate()
    return options
