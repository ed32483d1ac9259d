"""The moves-left utility of the native search (SearchOptions.moves_left_*; SPEC 6):
the network's plies-left estimates are backed up like values, and with a slope
the side ahead prefers shorter lines, the side behind longer ones."""

from __future__ import annotations

import numpy as np
import pytest
from search_support import hashed_answers

from chesszero import _core, core
from chesszero.search import ScriptedEvaluator, SearchOptions
from chesszero.search.pipeline import BatchPipeline


def _plies(planes: np.ndarray) -> np.ndarray:
    """A deterministic, position-dependent plies-left estimate in [20, 120)."""
    n = planes.shape[0]
    seeds = planes.reshape(n, -1).astype(np.float64) @ np.linspace(0.3, 7.0, 52 * 64)
    return (20.0 + 100.0 * np.abs(np.sin(seeds * 1.7))).astype(np.float32)


_PIECE_VALUES = np.array([1, 3, 3, 5, 9], np.float32)  # P N B R Q


def _material_answers(planes: np.ndarray):
    """Uniform logits; the side up in material (planes 40-44, own minus
    opponent) wins with 0.85, the side down loses with 0.85, even is drawish;
    plies left as _plies. The same side stays ahead at every depth."""
    n = planes.shape[0]
    material = planes[:, 40:45, 0, 0] @ _PIECE_VALUES
    win = np.where(material > 0, 0.85, np.where(material < 0, 0.05, 0.3)).astype(np.float32)
    loss = np.where(material > 0, 0.05, np.where(material < 0, 0.85, 0.3)).astype(np.float32)
    return np.zeros((n, 1880), np.float32), np.stack([win, 1 - win - loss, loss], axis=1), _plies(planes)


def _search(fn, options: SearchOptions, visits: int, game: core.Game | None = None) -> dict:
    searcher = _core.Searcher(1, options, 0, 1)
    searcher.start(0, game or core.Game(), visits)
    with BatchPipeline(searcher, ScriptedEvaluator(fn, record=False), batch_size=8, depth=1) as pipe:
        pipe.run()
    return searcher.result(0)


def _with_slope(slope: float, cap: float = 0.5) -> SearchOptions:
    options = SearchOptions.evaluation()
    options.moves_left_slope = slope
    options.moves_left_cap = cap
    return options


def test_plies_left_are_backed_up_one_ply_per_level() -> None:
    """Without a slope the estimates steer nothing: adding a constant to every
    estimate leaves the visits alone and moves every visited node's mean
    plies-left by exactly that constant; with zero estimates the root's mean is
    the mean depth of the traversals (each backup adds a ply per level)."""
    options = SearchOptions.evaluation()
    game = core.Game()
    game.push_uci("e2e4")
    zero = _search(lambda p: (*hashed_answers(p), np.zeros(p.shape[0], np.float32)), options, 300, game)
    shifted = _search(lambda p: (*hashed_answers(p), np.full(p.shape[0], 37.0, np.float32)), options, 300, game)
    absent = _search(hashed_answers, options, 300, game)
    assert zero["child_visits"] == shifted["child_visits"] == absent["child_visits"]
    assert shifted["moves_left"] == pytest.approx(zero["moves_left"] + 37.0, abs=1e-3)
    for n, a, b in zip(zero["child_visits"], zero["child_moves_left"], shifted["child_moves_left"], strict=True):
        assert (b == pytest.approx(a + 37.0, abs=1e-3)) if n > 0 else (a == b == 0.0)
    assert zero["proven"] is None  # no terminal reached: every traversal ended at a leaf
    assert zero["moves_left"] == pytest.approx(zero["mean_depth"], rel=1e-5)
    assert all(u == 0.0 for u in zero["child_utility"])


QUEEN_UP = {  # White has an extra queen; the side to move differs
    "ahead": "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "behind": "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1",
}


@pytest.mark.parametrize("side", ["ahead", "behind"])
def test_the_side_ahead_prefers_shorter_lines(side: str) -> None:
    """A queen up, the root's side moves its visits toward the moves whose
    lines end sooner and the search's expected game gets shorter; a queen
    down, toward the longer lines. Each visited child's utility has the sign
    the rule gives it and stays within the cap."""
    game = core.Game(QUEEN_UP[side])
    plain = _search(_material_answers, _with_slope(0.0, cap=0.1), 800, game)
    steered = _search(_material_answers, _with_slope(0.01, cap=0.1), 800, game)
    assert plain["visits"] == steered["visits"]
    assert (steered["value"] > 0.5) == (side == "ahead") and (steered["value"] < -0.5) == (side == "behind")
    shift = np.asarray(steered["child_visits"]) - np.asarray(plain["child_visits"])
    trend = np.corrcoef(shift, np.asarray(plain["child_moves_left"]))[0, 1]
    if side == "ahead":
        assert trend < -0.15
        assert steered["moves_left"] < plain["moves_left"] - 5.0
    else:
        assert trend > 0.5
        assert steered["moves_left"] > plain["moves_left"] + 0.5
    parent = steered["moves_left"]
    for n, q, m, u in zip(steered["child_visits"], steered["q"], steered["child_moves_left"],
                          steered["child_utility"], strict=True):
        assert abs(u) <= 0.1 + 1e-6
        if n == 0 or m == pytest.approx(parent) or q == 0:
            assert n > 0 or u == 0.0
            continue
        assert (u > 0) == ((m < parent) == (q > 0))


@pytest.mark.parametrize("solver", [True, False])
@pytest.mark.parametrize("slope", [0.0, 0.01])
def test_a_draw_inside_the_tree_is_length_neutral_with_the_utility_on(slope: float, solver: bool) -> None:
    """After 1. Nf3 Nf6 2. Ng1, Black's Ng8 repeats the start position: a draw
    inside the tree, although the game would go on. Without a slope it backs
    up 0 plies left as before (the search is unchanged); with one it backs up
    its parent's mean plies left less one, so a repetition never makes a line
    look short (which drew the side ahead into repetitions). With the solver
    the draw is a proven child, without it a terminal one: both back up so."""
    game = core.Game()
    for uci in ("g1f3", "g8f6", "f3g1"):
        game.push_uci(uci)
    options = _with_slope(slope, cap=0.1)
    options.proven_results = solver
    result = _search(_material_answers, options, 400, game)
    i = result["moves"].index("f6g8")
    assert result["child_proven"][i] == (0 if solver else None) and result["child_visits"][i] > 0
    plies = result["child_moves_left"][i]
    if slope == 0.0:
        assert plies == 0.0
    else:  # estimates lie in [20, 120): every backup into the root is at least 20
        assert 19.0 <= plies <= 130.0
        assert result["child_utility"][i] == pytest.approx(0.0, abs=1e-6)  # a draw's q is 0


def test_the_utility_is_capped() -> None:
    steered = _search(_material_answers, _with_slope(1.0, cap=0.01), 200, core.Game(QUEEN_UP["ahead"]))
    assert max(abs(u) for u in steered["child_utility"]) <= 0.01 + 1e-6
    assert any(abs(u) > 0.005 for u in steered["child_utility"])


def test_a_slope_needs_estimates_and_a_refused_answer_changes_nothing() -> None:
    searcher = _core.Searcher(1, _with_slope(0.01), 0, 1)
    searcher.start(0, core.Game(), 10)
    planes = np.zeros((4, 52, 8, 8), np.float32)
    assert searcher.prepare_batch(planes) == 1
    logits, wdl = np.zeros((1, 1880), np.float32), np.array([[0.2, 0.5, 0.3]], np.float32)
    with pytest.raises(ValueError, match="moves_left_slope > 0 needs"):
        searcher.submit_results(logits, wdl)
    with pytest.raises(ValueError, match="moves_left row 0"):
        searcher.submit_results(logits, wdl, np.array([np.nan], np.float32))
    with pytest.raises(ValueError, match=r"moves_left must have shape \(1,\)"):
        searcher.submit_results(logits, wdl, np.array([10.0, 11.0], np.float32))
    with pytest.raises(ValueError, match="shape"):
        searcher.submit_results(logits, wdl, np.zeros((1, 1), np.float32))
    with pytest.raises(ValueError, match="no evaluated root"):  # nothing was applied
        searcher.result(0)
    searcher.submit_results(logits, wdl, np.array([-3.0], np.float32))  # negative counts as 0
    r = searcher.result(0)
    assert r["visits"] == 1 and r["moves_left"] == 0.0 and r["raw_value"] == pytest.approx(-0.1)


@pytest.mark.parametrize(
    "field, value",
    [("moves_left_slope", -0.1), ("moves_left_slope", float("nan")), ("moves_left_cap", 2.0),
     ("moves_left_linear", 11.0), ("moves_left_quadratic", float("inf"))],
)
def test_bad_moves_left_options_are_refused(field: str, value: float) -> None:
    options = SearchOptions.evaluation()
    setattr(options, field, value)
    with pytest.raises(ValueError, match=field):
        options.validate()


def test_self_play_actors_take_the_estimates_too() -> None:
    """The actor's batch protocol is the searcher's: with a slope an answer
    without estimates is refused, and games play to the end with them."""
    actor = _core.Actor(_core.ActorOptions(num_games=2, seed=1, search=_with_slope(0.01)))
    actor.set_limits(visits=8, ply_cap=6)
    buf = np.zeros((8, 52, 8, 8), np.float32)
    n = actor.prepare_batch(buf)
    assert n > 0
    answer = (np.zeros((n, 1880), np.float32), np.tile(np.float32([0.6, 0.3, 0.1]), (n, 1)))
    with pytest.raises(ValueError, match="moves_left_slope > 0 needs"):
        actor.submit_results(*answer)
    finished: list = []
    while len(finished) < 2:
        actor.submit_results(*answer, np.full(n, 50.0, np.float32))
        finished += actor.take_finished()
        if len(finished) < 2:
            n = actor.prepare_batch(buf)
            answer = (np.zeros((n, 1880), np.float32), np.tile(np.float32([0.6, 0.3, 0.1]), (n, 1)))
    assert all(log.ending == _core.Termination.PLY_CAP.value for log in finished)
