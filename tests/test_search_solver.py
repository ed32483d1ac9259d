"""Proven results in the native search (MCTS-solver) and repetitions inside
the tree, checked against an independent python-chess reference.

The reference below (``solve``) is an exhaustive depth-limited negamax over
python-chess boards with the search's in-tree rules: checkmate, insufficient
material, stalemate, the fifty-move rule, and any repetition of a position of
the game or the path since the last irreversible move (twofold) score as
game ends. It returns bounds ``(lo, hi)`` on the value for the side to move
(-1 loss, 0 draw, +1 win); a depth that runs out leaves ``(-1, 1)``.
"""

from __future__ import annotations

import random
import time

import chess
import numpy as np
import pytest

from chesszero import core
from chesszero.search import (
    BatchSearch,
    ScriptedEvaluator,
    SearchOptions,
    UniformEvaluator,
    analyse,
)
from chesszero.search.assist import with_material_assist
from chesszero.search.evaluators import NUM_ACTIONS
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor

# Puzzles with their exact mate distance (checked by python-chess below).
MATE_IN_TWO = [
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1",  # Legal-style: Nf6+ gxf6 Bxf7#
    "6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1",  # Rg1+ Kxg1 Rxf1#
    "kbK5/pp6/1P6/8/8/8/8/R7 w - - 0 1",  # Ra6 (bxa6 b7#)
    "1r6/4b2k/1q1pNrpp/p2Pp3/4P3/1P1R3Q/5PPP/5RK1 w - - 1 1",  # Qxh6+ Kxh6 Rh3#
]
MATE_IN_THREE = [
    "r1b1kb1r/pppp1ppp/5q2/4n3/3KP3/2N3PN/PPP4P/R1BQ1B1R b kq - 0 1",  # Bc5+ Kxc5 Qb6+ Kd5 Qd6#
    "r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1",  # Ra6 f6 Bxf6+ Rg7 Rxa8#
]


def _terminal(board: chess.Board) -> int | None:
    """In-tree result for the side to move of a non-root node, None if the game goes on."""
    if board.is_checkmate():
        return -1
    if (
        board.is_insufficient_material()
        or board.is_stalemate()
        or board.halfmove_clock >= 100
        or board.is_repetition(2)
    ):
        return 0
    return None


def solve(board: chess.Board, depth: int) -> tuple[int, int]:
    """Bounds on the side to move's value with ``depth`` plies of exhaustive search."""
    end = _terminal(board)
    if end is not None:
        return end, end
    if depth == 0:
        return -1, 1
    lo, hi = -1, -1
    for move in list(board.legal_moves):
        board.push(move)
        c_lo, c_hi = solve(board, depth - 1)
        board.pop()
        lo, hi = max(lo, -c_hi), max(hi, -c_lo)
        if lo == 1:
            break
    return lo, hi


def mates_within(board: chess.Board, moves: int) -> bool:
    """Whether the side to move forces checkmate in at most ``moves`` moves."""
    for move in list(board.legal_moves):
        board.push(move)
        try:
            if board.is_checkmate():
                return True
            if moves > 1 and _terminal(board) is None and all(
                _defence_fails(board, reply, moves - 1) for reply in list(board.legal_moves)
            ):
                return True
        finally:
            board.pop()
    return False


def _defence_fails(board: chess.Board, reply: chess.Move, moves: int) -> bool:
    board.push(reply)
    try:
        return _terminal(board) is None and mates_within(board, moves)
    finally:
        board.pop()


def mate_distance(fen: str, most: int) -> int | None:
    """Fewest moves in which the side to move forces mate (at most ``most``)."""
    board = chess.Board(fen)
    return next((n for n in range(1, most + 1) if mates_within(board, n)), None)


def _game(fen: str, moves: list[str] = ()) -> core.Game:  # type: ignore[assignment]
    game = core.Game(fen)
    for uci in moves:
        game.push_uci(uci)
    return game


def _board(game: core.Game) -> chess.Board:
    board = chess.Board(game.start_fen())
    for uci in game.moves():
        board.push_uci(uci)
    return board


def _optimistic(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position looks won for its side to move (visits spread over the root first)."""
    n = planes.shape[0]
    return np.zeros((n, 1880), np.float32), np.tile(np.float32([1, 0, 0]), (n, 1))


def _hashed(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic, position-dependent logits and WDL (varied trees)."""
    n = planes.shape[0]
    seeds = planes.reshape(n, -1).astype(np.float64) @ np.linspace(0.1, 3.0, 52 * 64)
    logits = np.sin(np.outer(seeds, np.arange(1, 1881) * 1e-3)).astype(np.float32) * 3
    w = (np.sin(seeds) + 1) / 3
    wdl = np.stack([w, 1 - w - w * 0.5, w * 0.5], axis=1)
    return logits, (wdl / wdl.sum(axis=1, keepdims=True)).astype(np.float32)


def _material_hashed(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hashed priors; values from material (planes 40-44) plus hashed noise."""
    logits, wdl = _hashed(planes)
    diff = planes[:, 40:45, 0, 0] @ np.array([1, 3, 3, 5, 9], np.float32)
    v = np.clip(np.tanh(diff / 5) * 0.9 + (wdl[:, 0] - wdl[:, 2]) * 0.5, -1, 1)
    r = 1 - np.abs(v)
    return logits, np.stack([np.maximum(v, 0) + r / 3, r / 3, np.maximum(-v, 0) + r / 3], axis=1).astype(np.float32)


# ----------------------------------------------------------------------------- mates


def test_reference_confirms_the_puzzles() -> None:
    assert [mate_distance(f, 2) for f in MATE_IN_TWO] == [2] * len(MATE_IN_TWO)
    assert [mate_distance(f, 3) for f in MATE_IN_THREE] == [3] * len(MATE_IN_THREE)


@pytest.mark.parametrize(("fen", "moves"), [(f, 2) for f in MATE_IN_TWO] + [(f, 3) for f in MATE_IN_THREE])
def test_uniform_search_proves_short_mates(fen: str, moves: int) -> None:
    result = analyse(_game(fen), UniformEvaluator(), visits=5000)
    assert result.proven == 1 and result.mate_in == moves
    assert result.visits < 5000  # the search ends once the root is proven
    board = chess.Board(fen)
    board.push_uci(result.best_move)  # the chosen move keeps the mate in `moves`
    assert solve(board, 2 * moves - 2) == (-1, -1)
    assert len(result.principal_variation) == 2 * moves - 1
    board = chess.Board(fen)
    for uci in result.principal_variation:
        board.push_uci(uci)
    assert board.is_checkmate()
    # the defender's side: every move loses, mated in one move less
    after = _game(fen, [result.best_move])
    defence = analyse(after, UniformEvaluator(), visits=5000)
    assert defence.proven == -1 and defence.mate_in == -(moves - 1)
    assert all(m.proven == -1 for m in defence.moves)


def test_mate_in_one_is_found_whatever_the_prior() -> None:
    fen = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    game = _game(fen)
    hidden = game.action_of("a1a8")

    def blind(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        logits = np.zeros((n, 1880), np.float32)
        logits[:, hidden] = -40.0  # the mating move gets no prior at all
        return logits, np.tile(np.float32([0, 1, 0]), (n, 1))

    evaluator = ScriptedEvaluator(blind)
    result = analyse(game, evaluator, visits=2)
    assert result.best_move == "a1a8" and result.mate_in == 1
    assert evaluator.calls == 1  # one network call: the root's


def test_every_expanded_node_sees_the_mate_in_one_it_allows() -> None:
    fen = "4r1k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    game = _game(fen)
    blunders = {}
    for uci in game.legal_uci():
        after = _game(fen, [uci])
        mates = [r for r in after.legal_uci() if _game(fen, [uci, r]).outcome() is not None
                 and _game(fen, [uci, r]).outcome().termination == core.Termination.CHECKMATE]
        if mates:
            blunders[uci] = [after.action_of(r) for r in mates]
    assert len(blunders) == 7
    hidden = sorted({a for acts in blunders.values() for a in acts})

    def blind(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, wdl = _optimistic(planes)
        logits[:, hidden] = -40.0  # the mating replies get no prior
        return logits, wdl

    legal = len(game.legal_uci())
    result = analyse(game, ScriptedEvaluator(blind), visits=legal + 1)
    proven = {m.uci: (m.proven, m.plies) for m in result.moves if m.proven is not None}
    assert proven == {uci: (-1, 2) for uci in blunders}
    assert result.best_move not in blunders


def test_a_stalemate_trap_is_avoided_when_ahead() -> None:
    fen = "k7/8/2K5/8/8/8/8/1Q6 w - - 0 1"  # Qb6?? stalemates; Qb7# / Qb8#... are not here
    stalemates = [u for u in _game(fen).legal_uci() if _game(fen, [u]).outcome() is not None
                  and _game(fen, [u]).outcome().termination == core.Termination.STALEMATE]
    assert stalemates
    material = with_material_assist(UniformEvaluator(), 1.0)
    for visits in (8, 64, 400):
        result = analyse(_game(fen), material, visits=visits)
        assert result.best_move not in stalemates
        assert all(m.proven in (0, 1) for m in result.moves if m.uci in stalemates)


def test_proofs_survive_subtree_reuse_and_parallel_leaves() -> None:
    fen = MATE_IN_THREE[1]
    options = SearchOptions.evaluation()
    options.leaves_per_tree = 8
    evaluator = ScriptedEvaluator(record=False)
    search = BatchSearch(evaluator, options=options)
    game = _game(fen)
    first = search.search([game], visits=5000)[0]
    assert first.mate_in == 3
    line = first.principal_variation
    game.push_uci(line[0])
    game.push_uci(line[1])
    calls = evaluator.calls
    again = search.search([game], visits=1)[0]
    assert again.mate_in == 2 and evaluator.calls == calls  # known already: no network call
    assert again.principal_variation == line[2:]


def test_solver_off_reproduces_the_plain_search() -> None:
    options = SearchOptions.evaluation()
    options.proven_results = False
    result = analyse(_game(MATE_IN_TWO[0]), UniformEvaluator(), visits=300, options=options)
    assert result.proven is None and result.visits == 300


# ----------------------------------------------------------------------------- soundness


def _random_endgame(rng: random.Random) -> chess.Board:
    """A legal position with few pieces: K + (Q|R|P|R+P|Q vs R|P vs P) against a
    king; usually the lone king on the edge facing the other king (mating nets
    within reach of small trees)."""
    material = rng.choice([["Q"], ["R"], ["Q"], ["R"], ["P"], ["R", "P"], ["Q", "r"], ["P", "p"]])
    while True:
        board = chess.Board(None)
        squares = rng.sample(range(64), 2 + len(material))
        if rng.random() < 0.75:
            file, rank = rng.randrange(8), rng.choice([0, 7])
            if rng.random() < 0.5:
                file, rank = rank, rng.randrange(8)
            squares[1] = chess.square(file, rank)
            inward = (0, 2 if rank == 0 else -2) if rank in (0, 7) else (2 if file == 0 else -2, 0)
            f = min(7, max(0, file + inward[0] + rng.choice([-1, 0, 0, 1]) * (inward[0] == 0)))
            r = min(7, max(0, rank + inward[1] + rng.choice([-1, 0, 0, 1]) * (inward[1] == 0)))
            squares[0] = chess.square(f, r)
            if len(set(squares)) < len(squares):
                continue
        board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
        for sq, sym in zip(squares[2:], material, strict=True):
            board.set_piece_at(sq, chess.Piece.from_symbol(sym))
        board.turn = rng.choice([chess.WHITE, chess.WHITE, chess.BLACK])
        if board.is_valid() and not board.is_game_over():
            return board


def _check_proof(board: chess.Board, result: int, plies: int) -> bool:
    """Asserts one proven node (its board holds the game and the path) agrees
    with the reference; False when its proof is too deep to check here."""
    claim = (board.fen(), [m.uci() for m in board.move_stack[-plies - 2:]], result, plies)
    if plies == 0:
        assert _terminal(board) == result, claim
    elif result == 0:
        lo, hi = solve(board, min(plies, 2))
        assert lo <= 0 <= hi, claim
    elif plies <= 3:
        assert solve(board, plies) == (result, result), claim
    elif result == 1 and plies <= 5:
        assert mates_within(board, (plies + 1) // 2), claim
    elif result == -1 and plies <= 4:
        assert all(_defence_fails(board, reply, plies // 2) for reply in list(board.legal_moves)), claim
    else:
        return False
    return True


def test_proofs_on_small_endgames_agree_with_exhaustive_minimax() -> None:
    """Seeded random KQK/KRK/KPK/KRPK/KQKR/KPKP positions (some after a few king
    moves, so the game history holds repetition candidates), varied trees:
    every proven node of every tree is checked against the reference."""
    checked = {-1: 0, 0: 0, 1: 0}
    roots = 0
    for seed in range(80):
        rng = random.Random(seed)
        board = _random_endgame(rng)
        game = _game(board.fen())
        for _ in range(rng.randint(0, 4)):
            moves = [m for m in board.legal_moves if board.piece_type_at(m.from_square) == chess.KING
                     and not board.is_capture(m)]
            if not moves:
                break
            move = rng.choice(moves)
            board.push(move)
            game.push_uci(move.uci())
            if board.is_game_over() or game.is_game_over():
                board.pop()
                game.pop()
                break
        search = BatchSearch(ScriptedEvaluator(_material_hashed, record=False))
        result = search.search([game], visits=rng.choice([48, 200, 600]))[0]
        for path, value, plies in search.proofs(0):
            if not path:  # the root: its claim follows from its children's
                roots += 1
                kids = [m.proven for m in result.moves]
                assert result.proven == value
                assert (1 in kids) if value == 1 else (all(k == -1 for k in kids) if value == -1
                                                        else 1 not in kids and 0 in kids and None not in kids)
                continue
            node = board.copy()
            for uci in path:
                node.push_uci(uci)
            if _check_proof(node, value, plies):
                checked[value] += 1
    assert checked[-1] >= 20 and checked[1] >= 20 and checked[0] >= 20 and roots >= 2, (checked, roots)


# ----------------------------------------------------------------------------- repetitions


def test_twofold_repetition_inside_the_tree_is_a_draw() -> None:
    game = _game(chess.STARTING_FEN, ["g1f3", "g8f6", "f3g1"])
    result = analyse(game, ScriptedEvaluator(_optimistic), visits=60)
    q = {m.uci: m.q for m in result.moves}
    proven = {m.uci: m.proven for m in result.moves if m.proven is not None}
    assert proven == {"f6g8": 0} and q["f6g8"] == 0.0  # back to the start position: second occurrence
    options = SearchOptions.evaluation()
    options.twofold_draws = False
    plain = analyse(game, ScriptedEvaluator(_optimistic), visits=60, options=options)
    assert {m.uci: m.q for m in plain.moves}["f6g8"] == pytest.approx(-options.discount)
    # the game itself goes on after a twofold repetition, and the root is searched normally
    game.push_uci("f6g8")
    assert not game.is_game_over() and game.repetitions == 1
    again = analyse(game, ScriptedEvaluator(_optimistic), visits=60)
    assert again.proven is None and {m.uci: m.proven for m in again.moves}["g1f3"] == 0


def test_self_play_games_end_only_at_threefold() -> None:
    """Knight shuffles preferred by the prior, and every position looks won
    for the opponent, so each side takes a draw: games reach twofold
    repetitions (draws inside the tree) and go on; a record ends only at the
    third occurrence."""
    shuffle = {"g1f3", "f3g1", "g8f6", "f6g8"}

    out = core.Game().action_of("g1f3")  # canonical frame: also g8f6 for Black
    back = _game(chess.STARTING_FEN, ["g1f3", "e7e5"]).action_of("f3g1")  # and f6g8

    def shuffler(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        logits = np.full((n, 1880), -5.0, np.float32)
        logits[:, [out, back]] = 5.0
        return logits, np.tile(np.float32([1, 0, 0]), (n, 1))  # a draw beats any won-looking move

    actor = SelfPlayActor(ActorSettings(games_in_flight=2, seed=3, restart_fraction=0.0,
                                        random_opening_max_plies=0, continuation_fraction=1.0,
                                        search={"dirichlet_epsilon": 0.0}, temperature=((0, 0.0),),
                                        greedy_after_ply=0))
    try:
        report = actor.play(ScriptedEvaluator(shuffler, record=False), visits=8, ply_cap=60,
                            model_id="test", generation=0, games=2)
    finally:
        actor.close()
    assert report.records
    for record in report.records:
        board = chess.Board(record.start_fen)
        for i, uci in enumerate(record.moves):
            board.push_uci(uci)
            if i < len(record.moves) - 1:
                assert not board.is_repetition(3)
        assert set(record.moves) <= shuffle
        assert record.termination == "threefold_repetition" and board.is_repetition(3)


def test_a_reused_proven_root_still_records_a_whole_visit() -> None:
    """Retained visits are fractional (60% per move): a root that is already
    proven when its search begins takes free visits up to one whole visit."""
    search = BatchSearch(ScriptedEvaluator(record=False))
    game = _game(MATE_IN_THREE[1])
    first = search.search([game], visits=5000)[0]
    line = first.principal_variation
    for uci in line[:4]:
        game.push_uci(uci)
    calls = search.evaluator.calls  # type: ignore[attr-defined]
    result = search.search([game], visits=1)[0]
    assert result.mate_in == 1 and result.visits >= 1.0
    assert search.evaluator.calls == calls  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "expected"), [(0.3, -1.0), (-0.3, 1.0), (0.0, 0.0)])
def test_draw_score_counts_against_the_side_ahead(value: float, expected: float) -> None:
    """The root side is ahead when its root value is positive: a draw then
    costs it ``draw_score``; behind, a draw gains it as much; level, nothing."""

    def constant(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        r = 1 - abs(value)
        wdl = [max(value, 0) + r / 3, r / 3, max(-value, 0) + r / 3]
        return np.zeros((n, 1880), np.float32), np.tile(np.float32(wdl), (n, 1))

    game = _game(chess.STARTING_FEN, ["g1f3", "g8f6", "f3g1"])
    options = SearchOptions.self_play()
    options.dirichlet_epsilon = 0.0
    options.draw_score = 0.5
    result = analyse(game, ScriptedEvaluator(constant), visits=50, options=options)
    q = {m.uci: m.q for m in result.moves}
    assert q["f6g8"] == pytest.approx(expected * 0.5 * options.discount)  # twofold: a draw inside the tree


def test_the_ply_cap_search_uses_proofs() -> None:
    """A game cut at the ply cap in a mate-in-two position gets the proven
    value of that mate as its cap value (SPEC 5's dedicated cap search)."""
    from chesszero import _core

    actor = _core.Actor(_core.ActorOptions(num_games=1, seed=1))
    game = _game("k1K5/ppb5/1P6/8/8/8/8/R7 b - - 0 1", ["c7b8"])  # now MATE_IN_TWO[2]
    assert game.fen().split()[:2] == MATE_IN_TWO[2].split()[:2]
    actor.set_limits(visits=4000, ply_cap=1)
    actor.queue_resume(game, 0, "capped", _core.StartKind.RANDOM, True)
    buf = np.zeros((8, 52, 8, 8), np.float32)
    finished: list[object] = []
    evaluator = UniformEvaluator()
    for _ in range(10000):
        n = actor.prepare_batch(buf)
        actor.accepting = False  # the queued game is the only one
        if n:
            actor.submit_results(*evaluator.evaluate(buf[:n]))
        finished.extend(actor.take_finished())
        if finished:
            break
    (log,) = finished
    assert log.ending == 6  # ply cap
    assert log.cap_value == pytest.approx(SearchOptions.self_play().discount ** 3, rel=1e-5)


def test_the_policy_target_is_never_empty() -> None:
    """Every visit went to a move proven lost since: the move to play (not
    lost) carries the target, never an all-zero policy (shards need 1..60
    actions; a campaign stopped on this)."""
    fen = "4r1k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    game = _game(fen)
    blunder = game.action_of("a1a2")  # lets ...Re1# through

    def tempting(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        logits = np.zeros((n, 1880), np.float32)
        logits[:, blunder] = 20.0
        return logits, np.tile(np.float32([0, 1, 0]), (n, 1))

    result = analyse(game, ScriptedEvaluator(tempting), visits=2, options=SearchOptions.self_play())
    targets = {m.uci: m.policy_target for m in result.moves}
    stats = {m.uci: m for m in result.moves}
    assert stats["a1a2"].visits == 1 and stats["a1a2"].proven == -1
    assert targets["a1a2"] == 0 and sum(targets.values()) > 0
    assert targets[result.best_move] > 0 and stats[result.best_move].proven != -1


def test_a_proven_draw_does_not_echo_its_prior_at_the_root() -> None:
    """Self-play at 32 visits: a repetition (a proven draw inside the tree)
    with a dominant prior took most root visits, hence the policy target and
    the move, although every other move was worth more. At the root a proven
    child now takes no exploration visits and is played only when its exact
    value beats the most visited move's."""
    game = _game(chess.STARTING_FEN, ["g1f3", "g8f6", "f3g1"])  # ...f6g8 repeats the start
    draw = game.action_of("f6g8")

    def tempting(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        logits = np.zeros((n, 1880), np.float32)
        logits[:, draw] = 8.0
        return logits, np.tile(np.float32([0.1, 0.5, 0.4]), (n, 1))  # -0.3 for the side to move

    options = SearchOptions.self_play()
    options.dirichlet_epsilon = 0.0
    result = analyse(game, ScriptedEvaluator(tempting), visits=16, options=options)  # one visit a move
    stats = {m.uci: m for m in result.moves}
    assert stats["f6g8"].proven == 0 and stats["f6g8"].visits == 0 and stats["f6g8"].policy_target == 0
    assert result.best_move != "f6g8" and stats[result.best_move].q > 0.2


def test_a_tree_whose_every_traversal_ends_at_a_proven_node_returns_to_its_owner() -> None:
    """White (Kc1, Rd1 vs Ka1) can stalemate with Rd2 and the scripted network puts
    all its prior there and calls every position lost for the side to move, so
    each traversal goes to the proven draw and ends there: no leaf for the
    network. With a visit target of 10^8 (a UCI search bounded only by time)
    the prepare loop once spun through all of them (minutes, seen in a stuck
    `chesszero uci` under gdb); it now hands back after kTerminalRun (4,096)
    such traversals, so the owner can check its clock and `stop`."""
    game = core.Game("8/8/8/8/8/8/8/k1KR4 w - - 0 1")
    stalemate = game.action_of("d1d2")

    def lost_everywhere(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits = np.full((len(planes), NUM_ACTIONS), -30.0, np.float32)
        logits[:, stalemate] = 30.0
        return logits, np.tile(np.array([0.0, 0.0, 1.0], np.float32), (len(planes), 1))

    started = time.perf_counter()
    result = analyse(game, ScriptedEvaluator(lost_everywhere, record=False), visits=100_000_000)
    assert time.perf_counter() - started < 2.0  # about 2 ms; the old loop took seconds at best
    assert result.best_move == "d1d2" and 4096 <= result.visits < 10_000
