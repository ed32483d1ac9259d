"""Ladder: maximum-likelihood fit, table JSON, rung choice, calibration and rating."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from chesszero import core
from chesszero.cli import main as cli_main
from chesszero.evaluate.elo import expected_score
from chesszero.evaluate.ladder import (
    ANCHOR_RUNG,
    DEFAULT_RUNGS,
    LadderTable,
    Rung,
    RungKind,
    calibrate,
    choose_rung,
    ladder_pairings,
    rate_on_ladder,
    rung_player,
)
from chesszero.evaluate.openings import Opening, save_openings
from chesszero.evaluate.players import (
    STOCKFISH_PATH,
    GreedyPlayer,
    RandomPlayer,
    StockfishPlayer,
)
from chesszero.evaluate.progress import RichReporter
from chesszero.evaluate.rating_fit import PairingResult, fit_ratings

needs_stockfish = pytest.mark.skipif(
    shutil.which(STOCKFISH_PATH) is None, reason="Stockfish not installed"
)
ITALIAN = Opening(id="italian", moves=("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5"))
QUEENS = Opening(id="queens", moves=("d2d4", "d7d5", "c2c4", "e7e6"))


def test_fit_recovers_ratings_from_exact_expected_scores() -> None:
    truth = {"a": 900.0, "b": 1250.0, "c": 1700.0, "d": 2050.0}
    names = list(truth)
    results = [
        PairingResult(x, y, 1000, 1000 * expected_score(truth[x] - truth[y]))
        for i, x in enumerate(names)
        for y in names[i + 1 :]
    ]
    fit = fit_ratings(names, results, anchor="c", anchor_rating=1700, prior_draws=0)
    for name in names:
        assert fit.ratings[name] == pytest.approx(truth[name], abs=1e-6)
    assert fit.stderr["c"] == 0.0 and all(fit.stderr[n] > 0 for n in "abd")


def test_fit_matches_the_closed_form_for_two_players() -> None:
    # one pairing: the MLE score equals the observed score, so the Elo formula holds
    fit = fit_ratings(
        ["x", "y"], [PairingResult("x", "y", 40, 30)], anchor="y", anchor_rating=0, prior_draws=0
    )
    assert fit.ratings["x"] == pytest.approx(400 * np.log10(0.75 / 0.25))


def test_fit_pools_all_games_not_just_neighbours() -> None:
    # a beats b narrowly, but a crushes c which b only edges: all games move a's rating
    base = [PairingResult("a", "b", 100, 55), PairingResult("b", "c", 100, 55)]
    alone = fit_ratings("abc", base, anchor="c", anchor_rating=0, prior_draws=0)
    more = fit_ratings(
        "abc", [*base, PairingResult("a", "c", 100, 95)], anchor="c", anchor_rating=0, prior_draws=0
    )
    assert more.ratings["a"] > alone.ratings["a"] + 50


def test_clean_sweep_stays_finite_with_prior_draws() -> None:
    fit = fit_ratings(["w", "s"], [PairingResult("w", "s", 20, 0)], anchor="s", anchor_rating=1700)
    assert np.isfinite(fit.ratings["w"]) and 900 < fit.ratings["w"] < 1400


def test_disconnected_player_is_named() -> None:
    with pytest.raises(ValueError, match=r"\['z'\]"):
        fit_ratings(["a", "b", "z"], [PairingResult("a", "b", 10, 5)], anchor="a", anchor_rating=0)


def test_unknown_anchor_is_named() -> None:
    with pytest.raises(ValueError, match="nope"):
        fit_ratings(["a", "b"], [PairingResult("a", "b", 10, 5)], anchor="nope", anchor_rating=0)


def test_pairings_reach_two_rungs_up() -> None:
    names = [(a.name, b.name) for a, b in ladder_pairings(DEFAULT_RUNGS[:4], reach=2)]
    assert names == [
        ("random", "greedy-r50"),
        ("random", "greedy"),
        ("greedy-r50", "greedy"),
        ("greedy-r50", "sf-n1-r30"),
        ("greedy", "sf-n1-r30"),
    ]


def test_default_ladder_has_the_anchor_and_no_duplicate_opponents() -> None:
    names = [r.name for r in DEFAULT_RUNGS]
    assert names == [
        "random",
        "greedy-r50",
        "greedy",
        "sf-n1-r30",
        "sf-n1-r10",
        "sf-n1",
        "sf-n300",
        "sf-n600",
        "sf-n1000",
        "sf-n2000",
        "sf-n5000",
        "sf-n10000",
        "sf-n20000",
    ]
    assert ANCHOR_RUNG in names
    # Stockfish plays identical moves up to ~50 nodes: no two rungs inside that range
    plain = [r.nodes for r in DEFAULT_RUNGS if r.nodes is not None and r.random_share == 0]
    assert sum(n <= 50 for n in plain) == 1
    assert all(b / a <= 2.5 for a, b in zip(plain[1:], plain[2:], strict=False))


def test_random_share_rungs_round_trip_and_are_checked() -> None:
    rung = DEFAULT_RUNGS[3]
    assert rung.random_share == 0.3 and Rung.from_dict(rung.to_dict()) == rung
    assert Rung.from_dict({"name": "sf-n5", "kind": "stockfish", "nodes": 5}).random_share == 0.0
    with pytest.raises(ValueError, match="random mover"):
        Rung("random-r5", RungKind.RANDOM, random_share=0.05)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Rung("sf", RungKind.STOCKFISH, 1, random_share=1.5)


def test_choose_rung_nearest_half() -> None:
    assert choose_rung({"sf-n100": 0.81, "sf-n1000": 0.44, "sf-n5000": 0.12}) == "sf-n1000"
    with pytest.raises(ValueError, match="no rung"):
        choose_rung({})


def table() -> LadderTable:
    return LadderTable(
        rungs=[
            Rung("random", RungKind.RANDOM, rating=400.0, stderr=30.0),
            Rung("greedy", RungKind.GREEDY, rating=700.0, stderr=25.0),
            Rung("sf-n1", RungKind.STOCKFISH, 1, rating=1200.0, stderr=0.0),
        ],
        anchor="sf-n1",
        anchor_rating=1200.0,
        engine="Stockfish 15.1",
        calibrated="2025-01-02",
        games_per_pairing=4,
        pairings=[PairingResult("random", "greedy", 4, 1.5)],
    )


def test_table_round_trips_and_header_names_anchor_and_date(tmp_path: Path) -> None:
    path = tmp_path / "ladder.json"
    table().save(path)
    back = LadderTable.load(path)
    assert back == table()
    assert json.loads(path.read_text())["anchor"] == {"rung": "sf-n1", "rating": 1200.0}
    header = back.header()
    assert "sf-n1 = 1200" in header and "2025-01-02" in header and "Stockfish 15.1" in header
    assert back.describe().splitlines()[0] == header
    assert [r.name for r in back.ordered()] == ["random", "greedy", "sf-n1"]


def test_table_rejects_unknown_anchor() -> None:
    with pytest.raises(ValueError, match="sf-n9"):
        LadderTable(rungs=[Rung("random", RungKind.RANDOM)], anchor="sf-n9")


def test_rung_needs_nodes_exactly_for_stockfish() -> None:
    with pytest.raises(ValueError, match="nodes"):
        Rung("sf", RungKind.STOCKFISH)
    with pytest.raises(ValueError, match="nodes"):
        Rung("random", RungKind.RANDOM, nodes=5)


@needs_stockfish
def test_rate_on_ladder_walks_and_prints_the_anchor() -> None:
    rating, matches = rate_on_ladder(
        RandomPlayer(seed=9, name="model"),
        table(),
        [ITALIAN],
        budget="n=1",
        start="greedy",
        max_matches=2,
        max_plies=40,
        concurrency=2,
        engines=1,
    )
    assert 1 <= len(matches) <= 2
    assert rating.rung in rating.scores
    assert abs(rating.scores[rating.rung] - 0.5) == min(
        abs(s - 0.5) for s in rating.scores.values()
    )
    text = rating.describe()
    assert "model @ n=1" in text and "sf-n1 = 1200" in text and "2025-01-02" in text
    assert rating.elo.anchor == table().rating(rating.rung)


@needs_stockfish
def test_rate_on_ladder_reports_the_joint_rating_over_every_rung_played() -> None:
    rating, matches = rate_on_ladder(
        GreedyPlayer(seed=4, name="model"),
        table(),
        [ITALIAN, QUEENS],
        budget="n=1",
        start="random",
        max_matches=2,
        max_plies=40,
        concurrency=2,
        engines=1,
    )
    assert rating.joint is not None
    assert set(rating.joint.rung_names) == set(rating.scores) and len(matches) == len(rating.scores)
    assert {r.rung: r.rating for r in rating.joint.rungs} == {n: table().rating(n) for n in rating.scores}
    assert rating.joint.games == sum(len(m.games) for m in matches)
    first, second = rating.describe().splitlines()  # the `ladder rate` command prints both, joint first
    assert first.startswith("model @ n=1: joint ") and "sf-n1 = 1200" in second
    assert "nearest rung (the paper's number)" in second
    assert rating.to_dict()["joint"] == rating.joint.to_dict()


@needs_stockfish
def test_calibrate_small_ladder_end_to_end(tmp_path: Path) -> None:
    rungs = [
        Rung("random", RungKind.RANDOM),
        Rung("greedy", RungKind.GREEDY),
        Rung("sf-n1", RungKind.STOCKFISH, 1),
    ]
    stream = io.StringIO()
    result = calibrate(
        [ITALIAN, QUEENS],
        games_per_pairing=4,
        rungs=rungs,
        anchor="sf-n1",
        anchor_rating=1000,
        max_plies=40,
        reporter=RichReporter(Console(file=stream, width=120)),
    )
    shown = stream.getvalue()
    assert "Calibrating 3 pairings x 4 games" in shown
    assert shown.count("done ") == 3 and "random vs greedy" in shown
    assert "ladder anchor sf-n1 = 1000" in shown and "4 games/pairing" in shown
    assert result.reach == 2 and result.seconds > 0
    assert result.rating("sf-n1") == 1000
    assert len(result.pairings) == 3 and all(p.games == 4 for p in result.pairings)
    assert all(np.isfinite(r.rating) for r in result.rungs)
    assert result.engine.startswith("Stockfish") and result.calibrated
    with pytest.raises(ValueError, match="openings"):
        calibrate([ITALIAN], games_per_pairing=4, rungs=rungs, anchor="sf-n1")


@needs_stockfish
def test_cli_calibrate_then_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "openings.epd"
    save_openings([ITALIAN, QUEENS], suite)
    out = tmp_path / "ladder.json"
    code = cli_main(
        [
            "ladder",
            "calibrate",
            "--games",
            "2",
            "--out",
            str(out),
            "--openings",
            str(suite),
            "--rungs",
            "random",
            "sf-n1",
            "--anchor",
            "sf-n1",
            "--max-plies",
            "30",
        ]
    )
    assert code == 0
    assert LadderTable.load(out).anchor == "sf-n1"
    assert cli_main(["ladder", "show", str(out)]) == 0
    assert "ladder anchor sf-n1 = 1700" in capsys.readouterr().out


@needs_stockfish
def test_random_share_weakening_is_reproducible() -> None:
    game = core.Game()
    for move in ITALIAN.moves:
        game.push_uci(move)
    games = [game.copy() for _ in range(12)]

    def moves(seed: int) -> list[str]:
        player = StockfishPlayer(nodes=1, random_share=0.5, seed=seed, engines=1)
        try:
            assert player.name == "sf-n1-r50"
            return player.select_moves(games, list(range(len(games))))
        finally:
            player.close()

    first = moves(7)
    assert first == moves(7)
    assert len(set(first)) > 1  # some moves were random, the rest Stockfish's one choice
    with pytest.raises(ValueError, match="random_share"):
        StockfishPlayer(nodes=1, random_share=-0.1)


def test_cli_rates_a_network_with_its_anchor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    from chesszero.model.network import ChessNet
    from chesszero.publish import Provenance, export_onnx, fold_network

    torch.manual_seed(2)
    model = tmp_path / "tiny.onnx"
    export_onnx(fold_network(ChessNet("2x16", aux_heads=False)), model, Provenance("0" * 64, "0" * 64, 0))
    ladder = LadderTable(
        rungs=[
            Rung("random", RungKind.RANDOM, rating=300.0, stderr=20.0),
            Rung("greedy", RungKind.GREEDY, rating=650.0, stderr=0.0),
        ],
        anchor="greedy",
        anchor_rating=650.0,
        calibrated="2025-01-02",
        games_per_pairing=8,
    )
    ladder.save(tmp_path / "ladder.json")
    suite = tmp_path / "openings.epd"
    save_openings([ITALIAN, QUEENS], suite)
    out = tmp_path / "rating.json"
    argv = ["ladder", "rate", "--model", str(model), "--visits", "0", "--table", str(tmp_path / "ladder.json"),
            "--openings", str(suite), "--games", "4", "--max-plies", "30", "--concurrency", "4",
            "--start", "greedy", "--json", str(out)]
    assert cli_main(argv) == 0
    text = capsys.readouterr().out
    assert "tiny @ policy only" in text and "ladder anchor greedy = 650" in text
    assert json.loads(out.read_text())["rung"] in ("random", "greedy")
    assert cli_main([*argv[:3], str(tmp_path / "missing.onnx"), *argv[4:]]) == 2


def test_greedy_random_share_is_seeded_and_mixes_in_random_moves() -> None:
    game = core.Game()
    for move in ITALIAN.moves:
        game.push_uci(move)
    games = [game.copy() for _ in range(40)]
    pure = rung_player(Rung("greedy", RungKind.GREEDY), seed=1).select_moves(games, list(range(40)))
    half = Rung("greedy-r50", RungKind.GREEDY, random_share=0.5)
    mixed = rung_player(half, seed=1).select_moves(games, list(range(40)))
    assert mixed == rung_player(half, seed=1).select_moves(games, list(range(40)))
    assert len(set(mixed)) > len(set(pure))  # random moves widen the choice
    with pytest.raises(ValueError, match="random_share"):
        GreedyPlayer(random_share=2.0)
