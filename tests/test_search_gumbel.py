"""The Gumbel root (SPEC 6, ``SearchOptions.root = RootRule.GUMBEL``): the
halving schedule against schedules written out by hand, the completed-Q
target, the policy-improvement property, determinism and the solver."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest
from search_support import hashed_answers

from chesszero import _core, core
from chesszero.search import (
    BatchSearch,
    RootRule,
    ScriptedEvaluator,
    SearchOptions,
    UniformEvaluator,
    root_rule,
)

# Per-rank visits (rank 0 = the final survivor) of sequential halving, by hand:
# phases = ceil(log2 m); a phase with r moves gives each max(1, n // (phases * r))
# visits, r halves (never below 2); the last two share what is left.
HAND_SCHEDULES = {
    (16, 16): [1] * 16,  # 4 phases, 16 // 64 -> 1 each: the budget ends in phase 1
    (32, 16): [4] * 4 + [2] * 4 + [1] * 8,  # 16 x 1, 8 x 1, 4 x 2
    (64, 16): [15] * 2 + [7] * 2 + [3] * 4 + [1] * 8,  # 16 x 1, 8 x 2, 4 x 4, 2 x 8
    (64, 8): [21] * 2 + [7] * 2 + [2] * 4,  # 3 phases: 8 x 2, 4 x 5, 2 x 10, then 2 x 4 left
    (200, 16): [49] * 2 + [21] * 2 + [9] * 4 + [3] * 8,  # 16 x 3, 8 x 6, 4 x 12, 2 x 25, then 2 x 3 left
}


def gumbel_options(*, evaluation: bool = True, **fields: object) -> SearchOptions:
    o = SearchOptions.evaluation() if evaluation else SearchOptions.self_play()
    o.root = RootRule.GUMBEL
    for k, v in fields.items():
        setattr(o, k, v)
    o.validate()
    return o


_hashed = hashed_answers  # deterministic, position-dependent logits and WDL (search_support)


def _raw(searcher: _core.Searcher, slot: int = 0) -> dict:
    return searcher.result(slot)


def _search(game: core.Game, evaluator, visits: int, *, options: SearchOptions, noise: bool = False,
            seed: int = 0) -> tuple[dict, BatchSearch]:
    search = BatchSearch(evaluator, slots=1, options=options, seed=seed)
    search.search([game], visits=visits, noise=noise)
    return search.raw_result(0), search


@pytest.mark.parametrize(("budget", "m"), sorted(HAND_SCHEDULES))
def test_halving_schedule_matches_the_hand_written_one(budget: int, m: int) -> None:
    counts = _core.gumbel_halving_counts(budget, m)
    assert counts == HAND_SCHEDULES[(budget, m)]
    assert sum(counts) == budget


@pytest.mark.parametrize(("budget", "m"), sorted(HAND_SCHEDULES))
def test_search_spends_the_budget_by_the_schedule(budget: int, m: int) -> None:
    game = core.Game()  # 20 legal moves, none ends the game
    raw, _ = _search(game, ScriptedEvaluator(_hashed, record=False), budget,
                     options=gumbel_options(gumbel_considered=m))
    visits = sorted((int(v) for v in raw["child_search_visits"]), reverse=True)
    assert visits[:m] == HAND_SCHEDULES[(budget, m)]
    assert sum(visits) == budget and raw["visits"] == budget + 1  # + the root's own evaluation
    assert sum(raw["child_considered"]) == m
    # the move played has the most visits of the search
    best = raw["moves"].index(raw["best"])
    assert raw["child_search_visits"][best] == max(raw["child_search_visits"])


def test_retained_visits_stay_out_of_the_schedule() -> None:
    game = core.Game()
    options = gumbel_options(subtree_retention=1.0)
    search = BatchSearch(ScriptedEvaluator(_hashed, record=False), slots=1, options=options)
    first = search.search([game], visits=64)[0]
    game.push_uci(first.best_move)
    search.search([game], visits=32)  # the reused subtree keeps all its visits
    raw = search.raw_result(0)
    visits = sorted((int(v) for v in raw["child_search_visits"]), reverse=True)
    assert visits[:16] == HAND_SCHEDULES[(32, 16)]
    assert raw["visits"] > 33  # retained visits are extra


def test_completed_q_target_gives_unvisited_moves_v_mix() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        k = int(rng.integers(2, 30))
        prior = rng.dirichlet(np.ones(k)).astype(np.float32)
        visits = np.where(rng.random(k) < 0.5, rng.integers(1, 20, k), 0).astype(np.float32)
        q = rng.uniform(-1, 1, k).astype(np.float32)
        raw = float(rng.uniform(-1, 1))
        pi, sigma, vmix = _core.gumbel_improved_policy(raw, visits.tolist(), prior.tolist(), q.tolist(), 50.0, 1.0)
        seen = visits > 0
        if seen.any():
            expect = (raw + visits.sum() * (prior[seen] @ q[seen]) / prior[seen].sum()) / (1 + visits.sum())
        else:
            expect = raw
        assert vmix == pytest.approx(expect, abs=1e-5)
        completed = np.where(seen, q, vmix)
        lo, hi = completed.min(), completed.max()
        norm = (completed - lo) / (hi - lo) if hi - lo > 1e-8 else np.full(k, 0.5)
        assert np.allclose(sigma, (50.0 + visits.max()) * norm, atol=1e-3)
        logits = np.log(prior) + sigma
        target = np.exp(logits - logits.max())
        assert np.allclose(pi, target / target.sum(), atol=1e-5)
        assert sum(pi) == pytest.approx(1.0, abs=1e-5)


def test_search_target_is_the_improved_policy_over_every_legal_move() -> None:
    game = core.Game("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    raw, _ = _search(game, ScriptedEvaluator(_hashed, record=False), 48, options=gumbel_options())
    assert len(raw["moves"]) == len(game.legal_uci())
    targets = np.array(raw["child_targets"])
    assert targets.sum() == pytest.approx(1.0, abs=1e-5) and (targets > 0).all()
    visits = np.array(raw["child_visits"], np.float32)
    q = np.where(visits > 0, np.array(raw["q"], np.float32), 0.0)
    expect, _, _ = _core.gumbel_improved_policy(raw["raw_value"], visits.tolist(), raw["priors"], q.tolist())
    assert np.allclose(targets, expect, atol=1e-5)


def test_improved_policy_raises_the_expected_q() -> None:
    """The paper's property: E_pi'[q] >= E_prior[q] for the completed Q."""
    rng = np.random.default_rng(11)
    for _ in range(500):
        k = int(rng.integers(2, 40))
        prior = rng.dirichlet(np.full(k, 0.5)).astype(np.float32) + 1e-6
        prior /= prior.sum()
        visits = np.where(rng.random(k) < 0.4, rng.integers(1, 50, k), 0).astype(np.float32)
        q = rng.uniform(-1, 1, k).astype(np.float32)
        raw = float(rng.uniform(-1, 1))
        pi, _, vmix = _core.gumbel_improved_policy(raw, visits.tolist(), prior.tolist(), q.tolist(),
                                                   float(rng.uniform(0, 60)), float(rng.uniform(0.01, 2)))
        completed = np.where(visits > 0, q, vmix)
        assert np.dot(pi, completed) >= np.dot(prior, completed) - 1e-5


def test_two_simulations_never_choose_worse_than_the_sampled_best() -> None:
    """With two simulations the chosen move's Q is at least that of the move
    with the best g + logit (the prior's sampled best), whatever the noise."""
    board = chess.Board()
    rng = np.random.default_rng(5)
    checked = 0
    for seed in range(60):
        for _ in range(int(rng.integers(0, 12))):  # a varied position
            board.push(list(board.legal_moves)[int(rng.integers(board.legal_moves.count()))])
            if board.is_game_over():
                board = chess.Board()
        game = core.Game(board.fen())
        raw, _ = _search(game, ScriptedEvaluator(_hashed, record=False), 2,
                         options=gumbel_options(evaluation=False), noise=True, seed=seed)
        considered = [i for i, c in enumerate(raw["child_considered"]) if c]
        key = [raw["child_gumbel"][i] + math.log(max(raw["priors"][i], 1e-30)) for i in range(len(raw["moves"]))]
        sampled_best = max(considered, key=lambda i: key[i])
        chosen = raw["moves"].index(raw["best"])
        assert chosen in considered
        assert raw["q"][chosen] >= raw["q"][sampled_best] - 1e-6, (board.fen(), seed)
        checked += 1
    assert checked == 60


def test_evaluation_without_noise_is_deterministic_and_self_play_is_seeded() -> None:
    game = core.Game("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    ev = ScriptedEvaluator(_hashed, record=False)
    moves = {_search(game, ev, 40, options=gumbel_options(), seed=s)[0]["best"] for s in range(5)}
    assert len(moves) == 1  # g = 0: the seed does not matter
    sp = gumbel_options(evaluation=False)
    runs = [_search(game, ev, 40, options=sp, noise=True, seed=s)[0] for s in (1, 1, 2, 3, 4, 5)]
    assert runs[0]["child_gumbel"] == runs[1]["child_gumbel"] and runs[0]["best"] == runs[1]["best"]
    assert len({tuple(r["child_gumbel"]) for r in runs}) == 5  # other seeds, other noise
    assert all(g == 0 for g in _search(game, ev, 40, options=gumbel_options())[0]["child_gumbel"])


MATE_IN_ONE = [
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",  # Ra8#
    "k7/8/1K6/8/8/8/8/7R w - - 0 1",  # Rh8#
    "6rk/6pp/8/6N1/8/8/8/6K1 w - - 0 1",  # Nf7#
]


def _against_mate(good: str):
    """Logits that put ``good`` last: the proof alone must find it."""
    def fn(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        return np.linspace(5, 0, 1880, dtype=np.float32)[None].repeat(n, 0), np.tile(np.float32([0.3, 0.4, 0.3]), (n, 1))
    return fn


@pytest.mark.parametrize("visits", [2, 8, 64])
@pytest.mark.parametrize("fen", MATE_IN_ONE)
def test_mate_in_one_is_played_at_any_budget(fen: str, visits: int) -> None:
    board = chess.Board(fen)
    mates = {m.uci() for m in board.legal_moves if board.gives_check(m) and _is_mate(board, m)}
    assert mates
    for noise, options in ((False, gumbel_options()), (True, gumbel_options(evaluation=False))):
        raw, _ = _search(core.Game(fen), ScriptedEvaluator(_against_mate(""), record=False), visits,
                         options=options, noise=noise)
        assert raw["best"] in mates and raw["proven"] == 1


def _is_mate(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.is_checkmate()
    finally:
        board.pop()


MATE_IN_TWO_FORCED = "6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1"  # Rg1+ Kxg1 Rxf1#


def test_mate_in_two_is_proven_and_played_once_considered() -> None:
    board = chess.Board(MATE_IN_TWO_FORCED)
    assert chess.Move.from_uci("g2g1") in board.legal_moves
    probe, _ = _search(core.Game(MATE_IN_TWO_FORCED), UniformEvaluator(), 2, options=gumbel_options())
    action = dict(zip(probe["moves"], probe["actions"], strict=False))
    other = next(m for m in probe["moves"] if m != "g2g1")

    def second(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mating move's action ranks second, another move first: only the proof decides."""
        n = planes.shape[0]
        logits = np.zeros((n, 1880), np.float32)
        logits[:, action[other]] = 3.0
        logits[:, action["g2g1"]] = 2.0
        return logits, np.tile(np.float32([0.3, 0.4, 0.3]), (n, 1))

    for visits in (8, 64):
        raw, _ = _search(core.Game(MATE_IN_TWO_FORCED), ScriptedEvaluator(second, record=False), visits,
                         options=gumbel_options(gumbel_considered=2))
        assert raw["best"] == "g2g1", visits
        assert raw["proven"] == 1 and raw["proven_plies"] == 3


def test_moves_proven_lost_give_way_and_are_never_played() -> None:
    # White to move; every move that leaves the back rank open allows ...Re1#.
    fen = "4r1k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    for visits, noise in ((16, False), (64, False), (64, True)):
        raw, _ = _search(core.Game(fen), UniformEvaluator(), visits,
                         options=gumbel_options(evaluation=not noise), noise=noise, seed=visits)
        lost = {m for m, p in zip(raw["moves"], raw["child_proven"], strict=False) if p == -1}
        assert lost, "the search found none of the moves that allow mate"
        best = raw["best"]
        assert best not in lost and raw["child_considered"][raw["moves"].index(best)]
        # a considered move proven lost gave its place to another while one was left:
        # m moves stay considered, and beyond one (proven by the last simulation)
        # lost ones remain only when every move left out is lost too
        considered = {m for m, c in zip(raw["moves"], raw["child_considered"], strict=False) if c}
        assert len(considered) == min(16, visits)
        if len(considered & lost) > 1:
            assert set(raw["moves"]) - considered <= lost


def test_parallel_leaves_spend_the_same_budget() -> None:
    game = core.Game()
    raw, _ = _search(game, ScriptedEvaluator(_hashed, record=False), 64,
                     options=gumbel_options(leaves_per_tree=4))
    assert sum(raw["child_search_visits"]) == 64
    assert sum(1 for v in raw["child_search_visits"] if v > 0) == 16


def test_root_rule_names_and_bad_options() -> None:
    assert root_rule("gumbel") == RootRule.GUMBEL and root_rule("PUCT") == RootRule.PUCT
    with pytest.raises(ValueError, match="unknown search root rule 'alpha'"):
        root_rule("alpha")
    for field, value in (("gumbel_considered", 0), ("gumbel_c_scale", 0.0), ("gumbel_c_visit", -1.0)):
        o = gumbel_options()
        setattr(o, field, value)
        with pytest.raises(ValueError, match=field):
            o.validate()
    with pytest.raises(ValueError, match="m must be in 1..256"):
        _core.gumbel_halving_counts(10, 0)


def test_target_keeps_its_mass_when_a_lost_move_tops_the_softmax() -> None:
    # White to move: seven rook moves allow ...Re1#. A scripted network gives
    # those moves the largest logits and calls every white-to-move position
    # lost, so the moves proven lost (q -d^2) sit above the open ones (q about
    # -d) in sigma too. The open moves' shares of a softmax over every move
    # underflowed to zero, and the lost moves' shares are zeroed: a campaign's
    # actor wrote such a row with no target at all (cpu-2h-ro, generation 80).
    fen = "4r1k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    lost = {"a1a2", "a1a3", "a1a4", "a1a5", "a1a6", "a1a7", "a1e1"}
    raw, _ = _search(core.Game(fen), UniformEvaluator(), 2, options=gumbel_options())
    action = dict(zip(raw["moves"], raw["actions"], strict=True))
    lost_ids = [action[m] for m in lost]
    open_ids = [a for m, a in action.items() if m not in lost]

    def network(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        black = planes[:, 3].reshape(n, -1)[:, 4] > 0  # black's rook on e8 (canonical e1)
        logits = np.zeros((n, 1880), np.float32)
        logits[:, lost_ids] = 20.0
        logits[:, open_ids] = -20.0
        win = np.where(black, 0.999, 0.0)
        loss = np.where(black, 0.0, 0.999)
        return logits, np.stack([win, 1 - win - loss, loss], axis=1).astype(np.float32)

    for visits in (8, 16, 64):
        for evaluation in (True, False):
            raw, _ = _search(core.Game(fen), ScriptedEvaluator(network, record=False), visits,
                             options=gumbel_options(evaluation=evaluation), noise=not evaluation, seed=visits)
            proven = dict(zip(raw["moves"], raw["child_proven"], strict=True))
            assert {m for m, p in proven.items() if p == -1} == lost
            targets = dict(zip(raw["moves"], raw["child_targets"], strict=True))
            assert all(targets[m] == 0 for m in lost)
            assert sum(targets.values()) == pytest.approx(1.0, abs=1e-5), (visits, evaluation, targets)
            assert raw["best"] not in lost and targets[raw["best"]] > 0
