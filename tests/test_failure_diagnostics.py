"""Study 1's per-generation diagnostics against hand-computed values on synthetic records."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from chesszero.campaign import metrics as M
from chesszero.campaign.selfplay_stage import ActorSummary, cap_metrics
from chesszero.selfplay.cap_diagnostics import CapDiagnostics, cap_diagnostics
from chesszero.selfplay.records import GameRecord, SearchedPly, records_to_frame

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
MOVES = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6"]


def _ply(ply: int, *, cap: bool = False, tail: bool = False, root: float = 0.0) -> SearchedPly:
    return SearchedPly(ply=ply, policy_ids=[0], policy_counts=[1.0], policy_prior=[1.0], policy_discarded=0.0,
                       root_value=root, raw_value=0.0, policy_surprise=0.0, best_q=0.0, visits=1.0,
                       is_cap_search=cap, is_tail_search=tail)


def _record(prefix: int, moves: int, searched: list[int], *, termination: str = "checkmate",
            cap: bool = False, start: str = "random") -> GameRecord:
    """A game of ``prefix`` unsearched plies then ``moves`` plies, searched at ``searched``."""
    plies = [_ply(p) for p in searched] + ([_ply(moves, cap=True)] if cap else [])
    return GameRecord(game_id="g", model_id="m", generation=0, start_type=start, start_fen=START,  # type: ignore[arg-type]
                      prefix_moves=MOVES[:prefix], moves=MOVES[prefix:prefix + moves], plies=plies,
                      result="1/2-1/2" if cap else "1-0", termination=termination,  # type: ignore[arg-type]
                      cap_value=0.1 if cap else None)


RECORDS = [
    # 2 prefix plies, 6 searched moves: 8 plies played, 6 rows, 2 ineligible
    _record(2, 6, list(range(6))),
    # capped: 0 prefix, 4 moves all searched + the cap search: 4 plies, 5 rows (all on a cut target)
    _record(0, 4, list(range(4)), termination="ply_cap", cap=True),
    # 3 prefix plies, 5 moves of which ply 2 was played without a recorded search: 8 played, 4 rows, 4 ineligible
    _record(3, 5, [0, 1, 3, 4]),
    # restart: 4 plies of source history + the alternative (only the alternative is played here), 3 searched
    # moves: 1 + 3 = 4 played, 3 rows, 1 ineligible
    _record(4, 3, [0, 1, 2], start="restart"),
]


def test_counts_match_hand_computed_values() -> None:
    d = cap_diagnostics(RECORDS)
    assert d == CapDiagnostics(games=4, capped_games=1, rows=18, cut_rows=5, plies=24, ineligible_plies=7)
    assert d.capped_share == pytest.approx(1 / 4)
    assert d.cut_target_share == pytest.approx(5 / 18)
    assert d.ineligible_share == pytest.approx(7 / 24)


def test_late_tail_searches_are_ineligible_plies_and_not_rows() -> None:
    """The paper's earlier design (selfplay.late_tail): from game ply 4 on searches are cheap and untrained,
    and the capped game's cap value is the last (tail) search's root value, sign reversed."""
    # 1 prefix ply, 6 moves all searched; game plies 4, 5, 6 (moves 3, 4, 5) are tail searches
    plies = [_ply(p, tail=1 + p >= 4, root=0.25) for p in range(6)]
    capped = GameRecord(game_id="t", model_id="m", generation=0, start_type="random", start_fen=START,
                        prefix_moves=MOVES[:1], moves=MOVES[1:7], plies=plies, result="1/2-1/2",
                        termination="ply_cap", cap_value=-0.25)
    records_to_frame([capped])  # the schema admits it: no cap search, cap value = -(preceding root value)
    # 7 plies played: 1 prefix + 3 tail moves ineligible; 3 admitted rows, all on a cut target
    assert cap_diagnostics([capped]) == CapDiagnostics(games=1, capped_games=1, rows=3, cut_rows=3, plies=7,
                                                       ineligible_plies=4)
    d = cap_diagnostics([*RECORDS, capped])
    assert (d.capped_share, d.cut_target_share, d.ineligible_share) == pytest.approx((2 / 5, 8 / 21, 11 / 31))


def test_counts_add_over_shards_and_empty_is_undefined() -> None:
    assert cap_diagnostics(RECORDS[:1]) + cap_diagnostics(RECORDS[1:]) == cap_diagnostics(RECORDS)
    empty = cap_diagnostics([])
    assert (empty.capped_share, empty.cut_target_share, empty.ineligible_share) == (None, None, None)
    with pytest.raises(ValueError, match="part <= whole"):
        CapDiagnostics(games=1, capped_games=2)


def test_campaign_metrics_sum_actor_summaries() -> None:
    def summary(records: list[GameRecord]) -> ActorSummary:
        from dataclasses import asdict

        return ActorSummary(shard=None, actor=0, games=len(records), positions=0, searches=0, seconds=1.0,
                            terminations={}, label="main", diagnostics=asdict(cap_diagnostics(records)))

    metrics = cap_metrics([summary(RECORDS[:2]), summary(RECORDS[2:])])
    assert metrics[M.SELFPLAY_CAPPED_SHARE] == pytest.approx(1 / 4)
    assert metrics[M.SELFPLAY_CUT_TARGET_SHARE] == pytest.approx(5 / 18)
    assert metrics[M.SELFPLAY_INELIGIBLE_SHARE] == pytest.approx(7 / 24)
    # a sidecar written before the diagnostics existed holds none: nothing is logged, nothing is faked
    old = ActorSummary(shard=None, actor=0, games=2, positions=0, searches=0, seconds=1.0, terminations={},
                       label="main")
    assert cap_metrics([old]) == {}
    assert set(metrics) == {M.SELFPLAY_CAPPED_SHARE, M.SELFPLAY_CUT_TARGET_SHARE, M.SELFPLAY_INELIGIBLE_SHARE}
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in metrics.values())


def _valued(record: GameRecord, result: str, termination: str) -> GameRecord:
    """``record`` with root value ``ply / 10`` and raw value ``-ply / 10`` at each search, and the given ending."""
    plies = [replace(p, root_value=p.ply / 10, raw_value=-p.ply / 10) for p in record.plies]
    return replace(record, plies=plies, result=result, termination=termination)  # type: ignore[arg-type]


def test_cut_positions_take_the_position_searches_and_outcome_at_the_cut_ply() -> None:
    from chesszero import core
    from chesszero.studies.early_cut import cut_positions

    won = _valued(_record(2, 6, list(range(6))), "1-0", "checkmate")  # 8 plies: cut at 5 -> moves index 3
    capped = replace(_valued(_record(0, 8, list(range(8))), "1/2-1/2", "ply_cap"), game_id="capped")
    short = replace(_valued(_record(2, 3, [0, 1, 2]), "0-1", "checkmate"), game_id="short")  # over before ply 5
    unsearched = replace(_valued(_record(3, 5, [0, 1, 3, 4]), "0-1", "checkmate"), game_id="gap")  # cut ply 5 -> 2
    cuts = cut_positions([won, capped, short, unsearched], cut_ply=5)
    assert [c.game_id for c in cuts] == ["g", "capped"]
    first, second = cuts
    expected = core.Game(START)
    for uci in MOVES[:5]:
        expected.push_uci(uci)
    assert first.at.fen() == expected.fen() and not first.at.turn  # black to move after 5 plies
    assert first.before.fen() != first.at.fen() and first.before.turn
    assert first.recorded.ply == 3 and first.recorded.root_value == pytest.approx(0.3)
    assert first.preceding.ply == 2 and first.preceding.root_value == pytest.approx(0.2)
    assert first.outcome.tolist() == [0.0, 0.0, 1.0]  # white won: a loss for black, to move at the cut
    assert first.decisive and not first.adjudicated and first.plies_after == 3
    assert second.recorded.ply == 5 and second.plies_after == 3 and second.adjudicated and not second.decisive
    assert second.outcome.tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="cut_ply"):
        cut_positions([won], cut_ply=0)

