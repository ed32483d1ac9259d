"""The page's search (web/src/search.js) under Node, with a uniform network:
visit accounting, and mates in one found whatever their prior, as the native
search's proven results do."""

from __future__ import annotations

from web_support import SEARCH_CHECK, run_node

from chesszero import core

BACK_RANK = "6k1/5ppp/8/8/8/8/5PPP/R5K1 {} - - 0 1"  # Ra8 mates when White is to move


def search(fen: str, visits: int) -> dict:
    return run_node(SEARCH_CHECK, [{"start_fen": fen, "visits": visits}])[0]


def test_visits_are_counted_over_every_legal_move() -> None:
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    result = search(fen, 50)
    assert result["visits"] == 50
    assert sum(m["visits"] for m in result["moves"]) == 49  # the first visit expands the root
    assert {m["uci"] for m in result["moves"]} == set(core.Game(fen).legal_uci())
    assert result["best"] == max(result["moves"], key=lambda m: m["visits"])["uci"]


def test_a_mate_in_one_is_played_whatever_its_prior() -> None:
    result = search(BACK_RANK.format("w"), 2)  # 20 moves of equal prior, two visits
    assert result["best"] == "a1a8"


def test_a_move_that_allows_mate_in_one_is_avoided() -> None:
    result = search(BACK_RANK.format("b"), 100)
    visits = {m["uci"]: m["visits"] for m in result["moves"]}
    assert result["best"] != "g8h8"
    assert visits["g8h8"] <= 2  # its reply mates: -0.99 once the reply is expanded
