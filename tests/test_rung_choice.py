"""Which rungs an evaluation plays (issue 22): the final evaluation's climb
stops after two consecutive rungs below 0.25 (scripted scores), its order
follows the ladder, and the campaign's adaptive pick takes the rungs nearest
0.5 at the previous rating."""

from __future__ import annotations

from pathlib import Path

import pytest

from chesszero.evaluate.ladder import LadderTable
from chesszero.evaluate.rung_choice import CLIMB_START, ClimbRule, climb, climb_order, nearest_rungs

REPO = Path(__file__).resolve().parent.parent
ORDER = ["random", "greedy", "sf-n1-r30", "sf-n1-r10", "sf-n1", "sf-n300", "sf-n600", "sf-n1000"]


def scripted(scores: dict[str, float]) -> tuple[list[str], object]:
    asked: list[str] = []

    def play(rung: str) -> float:
        asked.append(rung)
        return scores[rung]

    return asked, play


@pytest.mark.parametrize(("scores", "played"), [
    # two consecutive below 0.25 stop the climb
    ([1.0, 0.95, 0.6, 0.2, 0.1, 0.9, 1.0, 1.0], 5),
    # one rung below, then one above: the count starts again
    ([1.0, 0.2, 0.6, 0.1, 0.3, 0.2, 0.0, 1.0], 7),
    # exactly 0.25 is not below
    ([1.0, 0.25, 0.25, 0.1, 0.2, 1.0, 1.0, 1.0], 5),
    # a weak player stops after its first two rungs
    ([0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 2),
    # a strong player climbs the whole ladder
    ([1.0] * 8, 8),
])
def test_the_climb_stops_after_two_consecutive_rungs_below_a_quarter(scores: list[float], played: int) -> None:
    asked, play = scripted(dict(zip(ORDER, scores, strict=True)))
    assert climb(play, ORDER) == ORDER[:played]
    assert asked == ORDER[:played]  # no rung played after the stop


def test_the_rule_is_a_setting() -> None:
    rule = ClimbRule(below=0.5, consecutive=3)
    assert not rule.done([0.4, 0.4]) and rule.done([0.9, 0.4, 0.4, 0.4]) and not rule.done([0.4, 0.6, 0.4])
    _, play = scripted(dict(zip(ORDER, [0.4, 0.4, 0.4, 1, 1, 1, 1, 1], strict=True)))
    assert climb(play, ORDER, rule) == ORDER[:3]
    with pytest.raises(ValueError, match="consecutive"):
        ClimbRule(consecutive=0)


def test_the_climb_order_follows_the_ladder() -> None:
    table = LadderTable.load(REPO / "data" / "ladder.json")
    ratings = {r.name: float(r.rating) for r in table.ordered()}
    order = climb_order(ratings)
    assert order[:6] == list(CLIMB_START)
    assert "greedy-r50" not in order  # not in the list, and weaker than sf-n300
    rest = order[6:]
    assert rest == sorted(rest, key=ratings.get) and set(rest) == {n for n, r in ratings.items()
                                                                   if r > ratings["sf-n300"]}
    assert climb_order({"random": 0.0, "x": 50.0, "greedy": 100.0, "y": 200.0}) == ["random", "greedy", "y"]


POOL = {"random": -412.0, "greedy-r50": 59.0, "greedy": 288.0, "sf-n1-r30": 503.0, "sf-n1-r10": 828.0,
        "sf-n1": 1146.0}


def test_the_adaptive_pick_takes_the_rungs_nearest_half_a_point() -> None:
    assert nearest_rungs(POOL, None, 2) == ["random", "greedy-r50"]  # first evaluation: the weakest
    assert nearest_rungs(POOL, (400.0, ""), 2) == ["greedy", "sf-n1-r30"]  # one each side
    assert nearest_rungs(POOL, (700.0, ""), 3) == ["greedy", "sf-n1-r30", "sf-n1-r10"]  # 412, 197, 128 away
    # every game won: the weakest rungs above the bound
    assert nearest_rungs(POOL, (376.0, ">"), 2) == ["sf-n1-r30", "sf-n1-r10"]
    assert nearest_rungs(POOL, (1000.0, ">"), 2) == ["sf-n1-r10", "sf-n1"]  # the ladder's top
    # every game lost: the strongest rungs below the bound
    assert nearest_rungs(POOL, (600.0, "<"), 2) == ["greedy", "sf-n1-r30"]
    assert nearest_rungs(POOL, (-500.0, "<"), 2) == ["random", "greedy-r50"]
    assert nearest_rungs(POOL, (0.0, ""), 10) == list(POOL)
    with pytest.raises(ValueError, match="count"):
        nearest_rungs(POOL, None, 0)
