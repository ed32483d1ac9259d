"""EnginePlayer and SlotSearch: batched policy and searched play in matches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chesszero import core
from chesszero.evaluate.engine_player import EnginePlayer, SlotSearch, policy_moves
from chesszero.evaluate.match import play_match
from chesszero.evaluate.openings import Opening
from chesszero.evaluate.players import Player, RandomPlayer
from chesszero.publish.loading import load_evaluator
from chesszero.search.evaluators import NUM_ACTIONS, ScriptedEvaluator, UniformEvaluator

ITALIAN = Opening(id="italian", moves=("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5"))
QUEENS = Opening(id="queens", moves=("d2d4", "d7d5", "c2c4", "e7e6"))
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8#


def game_after(*moves: str, fen: str | None = None) -> core.Game:
    game = core.Game(fen)
    for move in moves:
        game.push_uci(move)
    return game


def favour(action_order: list[int], margin: float = 15.0) -> ScriptedEvaluator:
    """Logits ranking ``action_order`` first (earlier = higher), the rest ``margin`` lower."""

    def answer(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        logits = np.zeros((n, NUM_ACTIONS), np.float32)
        for rank, action in enumerate(action_order):
            logits[:, action] = margin - 0.5 * rank
        return logits, np.tile(np.float32([0.3, 0.4, 0.3]), (n, 1))

    return ScriptedEvaluator(answer)


def test_policy_moves_pick_the_best_legal_action_in_one_call() -> None:
    start, after_e4 = core.Game(), game_after("e2e4")
    legal_start, legal_black = set(start.legal_actions()), set(after_e4.legal_actions())
    illegal_both = next(a for a in range(NUM_ACTIONS) if a not in legal_start | legal_black)
    # canonical frames: the same action index means the same from-to for either side to move
    wanted = start.action_of("g1f3")
    assert wanted in legal_black  # g8f6 for Black in its own frame
    evaluator = favour([illegal_both, wanted])
    moves = policy_moves(evaluator, [start, after_e4])
    assert moves == ["g1f3", "g8f6"]
    assert evaluator.calls == 1 and evaluator.batches[0].shape[0] == 2


def test_policy_moves_refuse_finished_games_and_bad_shapes() -> None:
    mated = game_after("f2f3", "e7e5", "g2g4", "d8h4")
    with pytest.raises(ValueError, match="finished game"):
        policy_moves(UniformEvaluator(), [mated])
    wrong = ScriptedEvaluator(lambda p: (np.zeros((p.shape[0], 7)), np.zeros((p.shape[0], 3))))
    with pytest.raises(ValueError, match="shape"):
        policy_moves(wrong, [core.Game()])
    assert policy_moves(UniformEvaluator(), []) == []


def test_searched_player_finds_mate_where_the_policy_does_not() -> None:
    game = core.Game(MATE_IN_ONE)
    first_legal = game.legal_actions()[0]
    evaluator = favour([int(first_legal)], margin=2.0)  # a prior that points away from mate
    assert policy_moves(evaluator, [game]) != ["a1a8"]
    searched = EnginePlayer(evaluator, visits=300)
    assert searched.select_moves([game], [0]) == ["a1a8"]


def test_slot_search_reuses_a_slots_tree_across_moves() -> None:
    search = SlotSearch(UniformEvaluator(), slots=4)
    game = core.Game()
    search.run([(3, game)], visits=64)
    assert search.report(3).visits == 64
    move = search.choose(3)
    game.push_uci(move)
    game.push_uci(game.legal_uci()[0])
    # another game in another slot between the two searches does not disturb slot 3
    search.run([(0, game_after("d2d4"))], visits=16)
    again = search.run([(3, game)], visits=64)
    assert search.report(3).visits >= 64
    search.forget(3)
    fresh = search.run([(3, game)], visits=64)  # positions evaluated (terminals need none)
    assert again < fresh - 5


def test_slot_search_stops_between_batches_and_never_resumes_silently() -> None:
    search = SlotSearch(UniformEvaluator(), slots=2)
    asked = []

    def keep_going() -> bool:
        asked.append(1)
        return len(asked) < 3

    search.run([(0, core.Game())], visits=10_000, keep_going=keep_going)
    visits = search.report(0).visits
    assert 1 <= visits < 10_000
    evaluated = search.run([(1, game_after("e2e4"))], visits=20)
    assert evaluated <= 20 and search.report(0).visits == visits  # slot 0 did not continue


def test_slot_search_checks_its_input() -> None:
    search = SlotSearch(UniformEvaluator(), slots=2)
    with pytest.raises(ValueError, match="once per run"):
        search.run([(0, core.Game()), (0, core.Game())], visits=4)
    with pytest.raises(ValueError, match="outside"):
        search.run([(2, core.Game())], visits=4)
    with pytest.raises(ValueError, match="slots must be"):
        SlotSearch(UniformEvaluator(), slots=0)


@pytest.mark.parametrize("visits", [None, 12])
def test_engine_player_plays_a_batched_match(visits: int | None) -> None:
    evaluator = ScriptedEvaluator()  # uniform answers, every batch recorded
    player = EnginePlayer(evaluator, visits=visits, slots=2)
    assert isinstance(player, Player)
    result = play_match(player, RandomPlayer(seed=3), [ITALIAN, QUEENS], concurrency=4, max_plies=40)
    player.close()
    assert len(result.games) == 4
    for record in result.games:
        referee = core.Game(record.start_fen)
        for move in record.moves:
            referee.push_uci(move)  # raises on an illegal move
    sizes = [len(b) for b in evaluator.batches]
    assert max(sizes) > 1  # positions of concurrent games shared a call
    if visits is None:
        assert max(sizes) <= 4
    with pytest.raises(RuntimeError, match="closed"):
        player.select_moves([core.Game()], [0])


def test_engine_player_names_and_checks_arguments() -> None:
    assert EnginePlayer(UniformEvaluator(), visits=None).name == "net-policy"
    assert EnginePlayer(UniformEvaluator(), visits=50).name == "net-v50"
    with pytest.raises(ValueError, match="visits"):
        EnginePlayer(UniformEvaluator(), visits=0)
    player = EnginePlayer(UniformEvaluator(), visits=4)
    with pytest.raises(ValueError, match="slots"):
        player.select_moves([core.Game()], [0, 1])


@pytest.fixture(scope="module")
def tiny_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    from chesszero.model.network import ChessNet
    from chesszero.publish import Provenance, export_onnx, fold_network

    torch.manual_seed(1)
    path = tmp_path_factory.mktemp("net") / "tiny.onnx"
    export_onnx(fold_network(ChessNet("2x16", aux_heads=False)), path, Provenance("0" * 64, "0" * 64, 0))
    return path


def test_load_evaluator_runs_a_published_artifact(tiny_artifact: Path) -> None:
    notes: list[str] = []
    evaluator = load_evaluator(tiny_artifact, warnings=notes)
    logits, wdl = evaluator.evaluate(core.encode_batch([core.Game(), game_after("e2e4")]))
    assert logits.shape == (2, NUM_ACTIONS) and np.allclose(wdl.sum(axis=1), 1, atol=1e-5)
    assert notes == []
    player = EnginePlayer(evaluator, visits=8)
    assert player.select_moves([core.Game()], [0])[0] in core.Game().legal_uci()


def test_load_evaluator_accepts_plain_onnx_with_a_warning_and_refuses_the_rest(
    tiny_artifact: Path, tmp_path: Path
) -> None:
    import onnx

    from chesszero.publish import EncodingVersionError
    from chesszero.publish.artifact import update_metadata

    model = onnx.load(str(tiny_artifact))
    del model.metadata_props[:]
    plain = tmp_path / "plain.onnx"
    onnx.save(model, str(plain))
    notes: list[str] = []
    evaluator = load_evaluator(plain, warnings=notes)
    assert evaluator.evaluate(core.encode_batch([core.Game()]))[0].shape == (1, NUM_ACTIONS)
    assert len(notes) == 1 and "plain ONNX" in notes[0]

    other = tmp_path / "other.onnx"
    other.write_bytes(tiny_artifact.read_bytes())
    update_metadata(other, encoding_version=int(core.ENCODING_VERSION) + 1)
    with pytest.raises(EncodingVersionError, match="encoding version"):
        load_evaluator(other)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a network")
    with pytest.raises(ValueError, match="junk.onnx"):
        load_evaluator(junk)
    with pytest.raises(ValueError, match="not found"):
        load_evaluator(tmp_path / "missing.onnx")
