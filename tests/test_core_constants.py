"""The game-ending and result codes and the encoding sizes have one owner, the
native core: the Python names are derived from its enums and constants."""

from __future__ import annotations

import numpy as np

from chesszero import _core, core
from chesszero.campaign import metrics
from chesszero.selfplay import logs, records


def test_python_codes_are_the_native_enums() -> None:
    native = _core.Termination
    assert [t.name for t in core.Termination] == [
        n for n, v in native.__members__.items() if 1 <= v.value <= 5
    ]
    for t in core.Termination:
        assert t.value == native.__members__[t.name].value
    assert {
        v.value: n.lower() for n, v in native.__members__.items() if v != native.NONE
    } == core.TERMINATION_NAMES
    assert tuple(core.TERMINATION_NAMES.values()) == records.TERMINATIONS
    assert sorted(metrics.TERMINATIONS) == sorted(records.TERMINATIONS)
    assert logs.TERMINATION_NAMES is core.TERMINATION_NAMES
    assert set(core.RESULT_TEXT) == {
        v.value for v in _core.GameResult.__members__.values() if v != _core.GameResult.ONGOING
    }
    assert tuple(core.RESULT_TEXT.values()) == records.RESULTS


def test_outcomes_and_game_logs_use_the_native_codes() -> None:
    game = core.Game("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    game.push_uci("a1a8")
    termination, result = game._status()
    assert termination == _core.Termination.CHECKMATE.value
    assert result == _core.GameResult.WHITE_WINS.value
    outcome = game.outcome()
    assert outcome is not None and outcome.result == "1-0" and outcome.winner is True
    assert outcome.termination is core.Termination.CHECKMATE

    actor = _core.Actor(_core.ActorOptions(num_games=2, seed=1))
    actor.set_limits(visits=2, ply_cap=4)
    buf = np.zeros((8, 52, 8, 8), np.float32)
    finished: list[_core.GameLog] = []
    while len(finished) < 2:
        n = actor.prepare_batch(buf)
        actor.submit_results(np.zeros((n, 1880), np.float32), np.tile(np.float32([0, 1, 0]), (n, 1)))
        finished += actor.take_finished()
    for log in finished:  # four plies: every game ends at the cap
        assert log.ending == _core.Termination.PLY_CAP.value
        assert logs.TERMINATION_NAMES[log.ending] == "ply_cap"
        assert logs.RESULT_NAMES[log.result] == "1/2-1/2"


def test_encoding_sizes_come_from_the_core() -> None:
    assert core.Game().encode().shape == (core.NUM_PLANES, 8, 8)
    assert core.Game().legal_mask().shape == (core.NUM_ACTIONS,)
    assert records.NUM_ACTIONS == core.NUM_ACTIONS
