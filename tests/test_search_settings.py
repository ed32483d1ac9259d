"""The recipe's search section reaches self-play and evaluation search options."""

from __future__ import annotations

from pathlib import Path

import pytest

from chesszero.campaign.search_settings import evaluation_search, selfplay_search
from chesszero.config import load_config
from chesszero.search import search_options

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def test_recipe_defaults_turn_the_solver_and_twofold_draws_on() -> None:
    cfg = load_config(PARAMS, preset="cpu")
    sp = search_options(selfplay_search(cfg))
    ev = evaluation_search(cfg)
    assert sp.proven_results and sp.twofold_draws and ev.proven_results and ev.twofold_draws
    assert sp.c_puct == pytest.approx(cfg.search.c_puct_selfplay)
    assert ev.c_puct == pytest.approx(cfg.search.c_puct_eval)
    assert ev.dirichlet_epsilon == 0.0 and ev.forced_playout_k == 0.0


def test_recipe_switches_reach_both_and_the_draw_score_only_self_play() -> None:
    cfg = load_config(PARAMS, preset="cpu", overrides={
        "search.proven_results": False, "search.twofold_draws": False, "search.draw_score": 0.25})
    sp = search_options(selfplay_search(cfg))
    ev = evaluation_search(cfg)
    assert not sp.proven_results and not sp.twofold_draws and sp.draw_score == pytest.approx(0.25)
    assert not ev.proven_results and not ev.twofold_draws and ev.draw_score == 0.0


def test_a_bad_draw_score_is_named() -> None:
    with pytest.raises(ValueError, match=r"search\.draw_score"):
        load_config(PARAMS, preset="cpu", overrides={"search.draw_score": 1.5})


def test_the_moves_left_utility_reaches_both_searches_and_publication() -> None:
    off = load_config(PARAMS, preset="cpu")
    assert not off.search.moves_left.enabled
    assert search_options(selfplay_search(off)).moves_left_slope == 0.0
    cfg = load_config(PARAMS, preset="cpu", overrides={
        "search.moves_left.slope": 0.004, "search.moves_left.cap": 0.05})
    for options in (search_options(selfplay_search(cfg)), evaluation_search(cfg)):
        assert options.moves_left_slope == pytest.approx(0.004)
        assert options.moves_left_cap == pytest.approx(0.05)
        assert options.moves_left_linear == pytest.approx(cfg.search.moves_left.linear)
        assert options.moves_left_quadratic == pytest.approx(cfg.search.moves_left.quadratic)
    with pytest.raises(ValueError, match=r"search\.moves_left\.slope"):
        load_config(PARAMS, preset="cpu", overrides={"search.moves_left.slope": -0.1})
    with pytest.raises(ValueError, match="'tensorrt' backend does not serve"):
        load_config(PARAMS, preset="cpu", overrides={"search.moves_left.slope": 0.004,
                                                     "inference.backend": "tensorrt"})


def test_eval_root_sets_evaluation_apart_from_self_play() -> None:
    from chesszero.search import RootRule

    same = load_config(PARAMS, preset="cpu", overrides={"search.root": "gumbel", "search.eval_root": None})
    assert same.search.eval_root is None
    assert search_options(selfplay_search(same)).root == RootRule.GUMBEL
    assert evaluation_search(same).root == RootRule.GUMBEL
    apart = load_config(PARAMS, preset="cpu", overrides={"search.root": "gumbel", "search.eval_root": "puct"})
    assert search_options(selfplay_search(apart)).root == RootRule.GUMBEL
    assert evaluation_search(apart).root == RootRule.PUCT
    reverse = load_config(PARAMS, preset="cpu", overrides={"search.root": "puct", "search.eval_root": "gumbel"})
    assert search_options(selfplay_search(reverse)).root == RootRule.PUCT
    assert evaluation_search(reverse).root == RootRule.GUMBEL
    with pytest.raises(ValueError, match=r"search\.eval_root"):
        load_config(PARAMS, preset="cpu", overrides={"search.eval_root": "mcts"})
