"""Mates in one (``evaluate.mates``): counted at the given side's turns
after the book, taken or let go, summed over a match, and reported in the
learning benchmark's ablation table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from learning_support import climb_summary, series

from chesszero import core
from chesszero.evaluate.match import GameRecord, MatchResult
from chesszero.evaluate.mates import MateInOne, mates_in_one

START = core.STARTING_FEN
FOOL = ["f2f3", "e7e5", "g2g4", "d8h4"]  # black mates at its second turn
MISSED = ["f2f3", "e7e5", "g2g4", "d8e7", "a2a3", "e7h4"]  # black lets it go once, then takes it


def test_taken_missed_and_the_other_side() -> None:
    assert mates_in_one(START, FOOL, white=False) == MateInOne(1, 1)
    assert mates_in_one(START, FOOL, white=True) == MateInOne(0, 0)
    # d8e7 lets Qh4# go; after a2a3 the queen on e7 mates on h4
    assert mates_in_one(START, MISSED, white=False) == MateInOne(2, 1)
    assert mates_in_one(START, MISSED, white=False, skip=4) == MateInOne(1, 1)  # the first turn was book
    assert MateInOne(2, 1).rate == 0.5 and MateInOne().rate is None
    assert MateInOne(2, 1) + MateInOne(1, 1) == MateInOne(3, 2)


def test_bad_input_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="skip must lie in"):
        mates_in_one(START, FOOL, white=False, skip=5)
    with pytest.raises(core.IllegalMoveError, match="e2e5"):
        mates_in_one(START, ["e2e5"], white=True)
    with pytest.raises(ValueError, match="played"):
        MateInOne(1, 2)


def test_a_match_sums_its_first_players_games() -> None:
    def game(index: int, moves: list[str], white: bool, book: int) -> GameRecord:
        return GameRecord(index=index, opening_id="o", first_is_white=white, start_fen=START, moves=tuple(moves),
                          book_plies=book, result="0-1", termination="checkmate", score=0.0 if white else 1.0)

    result = MatchResult(first="a", second="b", max_plies=300, started="", finished="", games=[game(0, FOOL, False, 0), game(1, MISSED, False, 0),
                                                        game(2, MISSED, True, 0), game(3, MISSED, False, 4)])
    assert result.mates_in_one() == MateInOne(1 + 2 + 0 + 1, 1 + 1 + 0 + 1)


def test_the_ablation_table_sums_them_and_older_runs_show_a_dash(tmp_path: Path) -> None:
    from learning_compare import Run, ablations_markdown
    from learning_curve import curve_from_series, write_csv

    old = climb_summary()  # the same run as written before mates were counted
    for m in old["final_evaluation"]["matches"]:
        del m["mate_in_one_available"], m["mate_in_one_played"]
    folders = []
    for name, data in (("new", climb_summary()), ("old", old)):
        folder = tmp_path / name
        write_csv(curve_from_series(series(3, conversion=False)), folder / "curve.csv")
        (folder / "summary.json").write_text(json.dumps({**data, "campaign": name}))
        folders.append(folder)
    rows = [r for r in ablations_markdown([Run.load(f) for f in folders]).splitlines() if r.startswith("| ")]
    assert rows[0].endswith("| policy mates in one taken | own targets' top move matched: final / control |")
    assert rows[1].startswith("| new |") and rows[1].endswith("| 15/49 | - |")
    assert rows[2].startswith("| old |") and rows[2].endswith("| - | - |")

