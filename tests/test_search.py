"""Native PUCT search through its Python face (chesszero.search)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from search_support import hashed_answers as _hashed

from chesszero import _core, core
from chesszero.search import (
    BatchSearch,
    MoveChoice,
    MoveChoiceOptions,
    ScriptedEvaluator,
    SearchOptions,
    UniformEvaluator,
    analyse,
)

BACK_RANK = {  # side to move mates in one on the back rank
    "white": ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "a1a8"),
    "black": ("r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1", "a8a1"),
}
STALEMATE_OR_MATE = {  # one move mates, one stalemates
    "white": ("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1", "c1c8", "c1c7"),
    "black": ("2q5/8/8/8/8/1k6/8/K7 b - - 0 1", "c8c1", "c8c2"),
}


def _ends_game(fen: str, uci: str) -> bool:
    game = core.Game(fen)
    game.push_uci(uci)
    return game.outcome() is not None


def _winning_for_side_to_move(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position looks won for its side to move: a non-terminal child
    then has Q = -discount from its parent's side."""
    n = planes.shape[0]
    return np.zeros((n, 1880), np.float32), np.tile(np.array([1, 0, 0], np.float32), (n, 1))


@pytest.mark.parametrize("colour", ["white", "black"])
def test_uniform_search_finds_mate_in_one(colour: str) -> None:
    fen, mate = BACK_RANK[colour]
    result = analyse(core.Game(fen), UniformEvaluator(), visits=200)
    assert result.best_move == mate
    assert result.principal_variation[0] == mate
    assert result.value > 0.5


@pytest.mark.parametrize(
    "fen",
    ["4r1k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "r5k1/5ppp/8/8/8/8/5PPP/4R1K1 b - - 0 1"],
)
def test_uniform_search_avoids_allowing_mate_in_one(fen: str) -> None:
    blunders = set()
    for uci in core.Game(fen).legal_uci():
        g = core.Game(fen)
        g.push_uci(uci)
        for reply in g.legal_uci():
            h = g.copy()
            h.push_uci(reply)
            outcome = h.outcome()
            if outcome is not None and outcome.termination == core.Termination.CHECKMATE:
                blunders.add(uci)
    assert len(blunders) == 7
    result = analyse(core.Game(fen), UniformEvaluator(), visits=1600)
    assert result.best_move not in blunders
    visits = result.visit_counts
    assert max(visits[m] for m in blunders) < min(v for m, v in visits.items() if m not in blunders)


@pytest.mark.parametrize("colour", ["white", "black"])
def test_terminal_children_have_exact_values(colour: str) -> None:
    fen, mate, stalemate = STALEMATE_OR_MATE[colour]
    options = SearchOptions.evaluation()
    options.proven_results = False  # the plain search: terminals are found when reached
    result = analyse(
        core.Game(fen), ScriptedEvaluator(_winning_for_side_to_move), visits=300, options=options
    )
    q = {m.uci: m.q for m in result.moves}
    assert q[mate] == pytest.approx(options.discount)  # the opponent is mated: +1, one ply up
    assert q[stalemate] == 0.0
    once = [m for m in result.moves if m.uci not in (mate, stalemate) and m.visits == 1]
    assert len(once) >= 3 and all(m.q == pytest.approx(-options.discount) for m in once)
    assert result.best_move == mate
    assert result.proven is None and all(m.proven is None for m in result.moves)


@pytest.mark.parametrize("colour", ["white", "black"])
def test_terminal_children_are_classified_at_expansion(colour: str) -> None:
    fen, mate, stalemate = STALEMATE_OR_MATE[colour]
    options = SearchOptions.evaluation()
    result = analyse(
        core.Game(fen), ScriptedEvaluator(_winning_for_side_to_move), visits=300, options=options
    )
    q = {m.uci: m.q for m in result.moves}
    assert q[mate] == pytest.approx(options.discount)
    assert q[stalemate] == 0.0
    proven = {m.uci: (m.proven, m.plies) for m in result.moves if m.proven is not None}
    assert proven[mate] == (1, 1) and proven[stalemate] == (0, 1)
    for uci, (value, _) in proven.items():  # every game-ending move, and only those
        after = core.Game(fen)
        after.push_uci(uci)
        outcome = after.outcome()
        assert outcome is not None and (value == 1) == (outcome.termination == core.Termination.CHECKMATE)
    assert len(proven) == sum(1 for u in core.Game(fen).legal_uci() if _ends_game(fen, u))
    assert {m.uci for m in result.moves[: len(proven)]} == set(proven)  # game-ending children first
    assert result.best_move == mate and result.principal_variation == [mate]
    assert (result.proven, result.proven_plies, result.mate_in) == (1, 1, 1)
    assert result.visits == 1  # proven at the root's expansion: the search ends at once
    assert result.value == pytest.approx(options.discount)


def test_repetition_uses_the_game_history() -> None:
    game = core.Game()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        game.push_uci(uci)
    result = analyse(game, ScriptedEvaluator(_winning_for_side_to_move), visits=100)
    q = {m.uci: m.q for m in result.moves if m.visits > 0 or m.proven is not None}  # proven: exact, unvisited
    assert q["f6g8"] == 0.0  # third occurrence of the start position: a draw
    assert all(v == pytest.approx(-0.99) for m, v in q.items() if m != "f6g8")


def test_fifty_move_rule_and_insufficient_material_are_terminal() -> None:
    fifty = core.Game("8/8/4k3/8/8/3K4/4P3/7R w - - 99 80")
    result = analyse(fifty, ScriptedEvaluator(_winning_for_side_to_move), visits=200)
    q = {m.uci: m.q for m in result.moves if m.visits > 0 or m.proven is not None}
    assert q["h1h2"] == 0.0  # quiet move: halfmove clock 100
    assert q["e2e4"] == pytest.approx(-0.99)  # pawn move resets the clock
    lone = core.Game("8/8/4k3/8/8/8/3r4/3K4 w - - 0 1")
    result = analyse(lone, ScriptedEvaluator(_winning_for_side_to_move), visits=100)
    q = {m.uci: m.q for m in result.moves if m.visits > 0 or m.proven is not None}
    assert q["d1d2"] == 0.0  # king takes the last piece: insufficient material


def test_fixed_seed_search_fingerprint() -> None:
    game = core.Game()
    game.push_uci("e2e4")

    def run(seed: int, noise: bool) -> str:
        search = BatchSearch(
            ScriptedEvaluator(_hashed), options=SearchOptions.self_play(), seed=seed
        )
        r = search.search([game], visits=300, noise=noise)[0]
        moves = sorted(r.moves, key=lambda m: m.uci)
        text = " ".join(f"{m.uci}:{m.visits:g}:{m.policy_target:g}" for m in moves)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    quiet = run(0, False)
    assert quiet == run(7, False)  # no noise: the seed is irrelevant
    assert run(3, True) == run(3, True)
    assert run(3, True) != run(4, True)
    assert quiet == "9068a2e0da7f0e4a", (
        "search fingerprint changed: bump it only for intended changes"
    )


def test_forced_playout_pruning_only_reduces_non_best_children() -> None:
    options = SearchOptions.self_play()
    for seed in range(4):
        search = BatchSearch(ScriptedEvaluator(_hashed), options=options, seed=seed)
        r = search.search([core.Game()], visits=400, noise=True)[0]
        best = max(r.moves, key=lambda m: m.visits)
        assert best.policy_target == best.visits
        assert all(m.policy_target <= m.visits for m in r.moves)
        assert sum(m.policy_target for m in r.moves) < sum(m.visits for m in r.moves)
    plain = SearchOptions.self_play()
    plain.forced_playout_k = 0.0
    r = BatchSearch(ScriptedEvaluator(_hashed), options=plain).search(
        [core.Game()], visits=400, noise=True
    )[0]
    assert all(m.policy_target == m.visits for m in r.moves)


def test_subtree_reuse_keeps_sixty_percent() -> None:
    search = BatchSearch(ScriptedEvaluator(_hashed), options=SearchOptions.evaluation())
    game = core.Game()
    first = search.search([game], visits=500)[0]
    move = first.most_visited
    child_visits = first.visit_counts[move]
    game.push_uci(move)
    kept = search.search([game], visits=1)[0]  # the cap is already met by retained visits
    assert kept.visits == pytest.approx(0.6 * child_visits, rel=1e-5)
    topped = search.search([game], visits=300)[0]
    assert 300 <= topped.visits < 301  # the visit cap counts retained visits
    search.forget(0)
    fresh = search.search([game], visits=300)[0]
    assert 300 <= fresh.visits < 301


def test_parallel_leaves_never_share_an_unexpanded_leaf() -> None:
    options = SearchOptions.evaluation()
    options.leaves_per_tree = 16
    searcher = _core.Searcher(1, options, 0, 2)
    buf_a = np.zeros((32, 52, 8, 8), np.float32)
    buf_b = np.zeros((32, 52, 8, 8), np.float32)
    uniform = UniformEvaluator()
    searcher.start(0, core.Game(), 400)
    assert searcher.prepare_batch(buf_a) == 1  # only the root exists
    assert searcher.prepare_batch(buf_b) == 0  # the root is waiting: a collision, not a duplicate
    searcher.submit_results(*uniform.evaluate(buf_a[:1]))
    seen: set[tuple[str, ...]] = set()
    for _ in range(10):
        n_a = searcher.prepare_batch(buf_a)
        n_b = searcher.prepare_batch(buf_b)
        paths = [tuple(m) for _, m in searcher.describe_batch()]
        assert len(paths) == n_a and n_a > 1
        assert len(set(paths)) == len(paths)
        seen.update(paths)
        searcher.submit_results(*uniform.evaluate(buf_a[:n_a]))
        paths_b = [tuple(m) for _, m in searcher.describe_batch()] if n_b else []
        assert not set(paths_b) & set(paths)
        if n_b:
            searcher.submit_results(*uniform.evaluate(buf_b[:n_b]))
    two_moves = core.Game("7k/8/8/8/8/8/8/K6q w - - 0 1")  # Ka2 or Kb2
    searcher.start(0, two_moves, 50)
    assert searcher.prepare_batch(buf_a) == 1
    searcher.submit_results(*uniform.evaluate(buf_a[:1]))
    assert searcher.prepare_batch(buf_a) == 2  # both children, then every choice is waiting
    assert sorted(tuple(m) for _, m in searcher.describe_batch()) == [("a1a2",), ("a1b2",)]


def test_batch_rows_are_the_encoded_leaf_positions() -> None:
    options = SearchOptions.evaluation()
    options.leaves_per_tree = 4
    searcher = _core.Searcher(3, options, 0, 1)
    games = [
        core.Game(),
        core.Game(BACK_RANK["black"][0]),
        core.Game(STALEMATE_OR_MATE["white"][0]),
    ]
    games[0].push_uci("d2d4")
    for i, g in enumerate(games):
        searcher.start(i, g, 40)
    buf = np.zeros((12, 52, 8, 8), np.float32)
    evaluator = ScriptedEvaluator(_hashed)
    checked = 0
    while searcher.active:
        n = searcher.prepare_batch(buf)
        if n == 0:
            break
        for row, (slot, path) in enumerate(searcher.describe_batch()):
            leaf = games[slot].copy()
            for uci in path:
                leaf.push_uci(uci)
            np.testing.assert_array_equal(buf[row], leaf.encode())
            checked += 1
        searcher.submit_results(*evaluator.evaluate(buf[:n]))
    assert checked > 30
    for slot, g in enumerate(games):
        legal = set(g.legal_uci())
        assert set(searcher.result(slot)["moves"]) == legal


def test_policy_only_choice_plays_the_top_legal_prior() -> None:
    game = core.Game()

    def prefer(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits = np.zeros((planes.shape[0], 1880), np.float32)
        logits[:, game.action_of("g1f3")] = 5.0
        logits[:, 1879] = 50.0  # an illegal action here: masked away
        return logits, np.tile(np.array([0, 1, 0], np.float32), (planes.shape[0], 1))

    choice = MoveChoiceOptions(mode=MoveChoice.POLICY)
    result = analyse(game, ScriptedEvaluator(prefer), visits=1, choice=choice)
    assert result.best_move == "g1f3"
    prior = {m.uci: m.prior for m in result.moves}
    assert prior["g1f3"] > 0.5 and sum(prior.values()) == pytest.approx(1.0, abs=1e-5)


def test_bad_parameters_raise_value_error() -> None:
    uniform = UniformEvaluator()
    with pytest.raises(ValueError):
        analyse(core.Game(), uniform, visits=0)
    with pytest.raises(ValueError):
        SearchOptions(no_such_option=1)
    with pytest.raises(ValueError):
        BatchSearch(uniform, options=SearchOptions(c_puct=-1.0))
    with pytest.raises(ValueError):
        BatchSearch(uniform, options=SearchOptions(leaves_per_tree=0))
    with pytest.raises(ValueError):
        analyse(
            core.Game("6k1/5ppp/8/8/8/8/5PPP/r5K1 w - - 0 1").copy(), uniform, visits=10
        )  # mated
    searcher = _core.Searcher(1, SearchOptions(), 0, 1)
    with pytest.raises(ValueError):
        searcher.submit_results(np.zeros((1, 1880), np.float32), np.zeros((1, 3), np.float32))
    searcher.start(0, core.Game(), 10)
    for bad in (
        np.zeros((4, 52, 8, 7), np.float32),
        np.zeros((4, 52, 8, 8), np.float64),
        np.zeros((0, 52, 8, 8), np.float32),
        np.zeros((4, 52, 8, 8), np.float32)[:, :, :, ::-1],
    ):
        with pytest.raises(ValueError):
            searcher.prepare_batch(bad)
    buf = np.zeros((4, 52, 8, 8), np.float32)
    assert searcher.prepare_batch(buf) == 1
    with pytest.raises(ValueError):
        searcher.prepare_batch(buf)  # one batch may be outstanding
    for logits, wdl in (
        (np.zeros((2, 1880), np.float32), np.zeros((2, 3), np.float32)),
        (np.zeros((1, 1879), np.float32), np.zeros((1, 3), np.float32)),
        (np.full((1, 1880), np.nan, np.float32), np.array([[0, 1, 0]], np.float32)),
        (np.zeros((1, 1880), np.float32), np.array([[np.nan, 1, 0]], np.float32)),
    ):
        with pytest.raises(ValueError):
            searcher.submit_results(logits, wdl)
    searcher.submit_results(
        np.zeros((1, 1880)), np.array([[0.2, 0.5, 0.3]])
    )  # float64 is converted
    with pytest.raises(ValueError):
        searcher.start(5, core.Game(), 10)


def test_a_refused_answer_changes_nothing() -> None:
    """submit_results checks every row before it applies any: a bad last row
    leaves the whole batch outstanding, and only legal entries are read."""
    games = [core.Game(), core.Game(BACK_RANK["white"][0]), core.Game(BACK_RANK["black"][0])]
    searcher = _core.Searcher(len(games), SearchOptions.self_play(), 0, 1)
    for slot, game in enumerate(games):
        searcher.start(slot, game, 20)
    assert searcher.prepare_batch(np.zeros((3, 52, 8, 8), np.float32)) == 3
    legal = set(games[2].legal_actions().tolist())
    logits = np.zeros((3, 1880), np.float32)
    logits[2, next(a for a in range(1880) if a not in legal)] = np.nan  # never read
    wdl = np.tile(np.array([0.1, 0.2, 0.7], np.float32), (3, 1))
    bad = logits.copy()
    bad[2, min(legal)] = np.nan
    with pytest.raises(ValueError, match="row 2"):
        searcher.submit_results(bad, wdl)
    searcher.submit_results(logits, wdl)
    for slot in range(3):
        result = searcher.result(slot)
        assert result["visits"] == 1 and result["raw_value"] == pytest.approx(-0.6)


def test_depth_statistics_count_this_search_only() -> None:
    from chesszero.evaluate.engine_player import SlotSearch

    search = SlotSearch(ScriptedEvaluator(_hashed, record=False))
    game = core.Game()
    search.run([(0, game)], visits=1)
    first = search.report(0)
    assert (first.seldepth, first.mean_depth) == (0, 0.0)  # only the root was evaluated
    search.run([(0, game)], visits=400)
    deep = search.report(0, pv_len=64)
    assert 2 <= deep.seldepth <= 400
    assert 1.0 <= deep.mean_depth <= deep.seldepth
    assert deep.seldepth >= len(deep.pv)  # every PV node was reached by a traversal of this search
    # A new search starts its statistics afresh (here: only its root evaluated).
    search.run([(0, core.Game(BACK_RANK["white"][0]))], visits=1)
    assert (search.report(0).seldepth, search.report(0).mean_depth) == (0, 0.0)
