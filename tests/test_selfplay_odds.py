"""Material-odds starts (``selfplay.odds_fraction``): the native position
generator, the actor's odds games, their separate accounting, and the recipe."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import chess
import pytest

from chesszero import _core, core
from chesszero.campaign.selfplay_stage import ActorSummary, aggregate
from chesszero.config import load_config
from chesszero.material import PIECE_PAWNS, material_of_fen
from chesszero.search import UniformEvaluator
from chesszero.selfplay import records as rec
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor
from chesszero.selfplay.logs import PendingGame, conversion_counts, termination_histogram

MIDGAME = "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/2N2N2/PPPP1PPP/R1BQK2R w KQkq - 4 5"


def _side_material(fen: str, white: bool) -> int:
    board = fen.split()[0]
    return sum(PIECE_PAWNS.get(c.lower(), 0) for c in board if c.isalpha() and c.isupper() == white)


def test_odds_fen_takes_material_from_one_side_only() -> None:
    before = {True: _side_material(MIDGAME, True), False: _side_material(MIDGAME, False)}
    givers = set()
    for seed in range(200):
        fen = _core.odds_fen(MIDGAME, 3, 20, seed)
        assert fen is not None
        after = {w: _side_material(fen, w) for w in (True, False)}
        lost = {w: before[w] - after[w] for w in (True, False)}
        giver = lost[True] > 0
        givers.add(giver)
        assert lost[not giver] == 0, fen
        assert 3 <= lost[giver] <= 20, fen
        board = chess.Board(fen)
        assert len(board.pieces(chess.KING, chess.WHITE)) == len(board.pieces(chess.KING, chess.BLACK)) == 1
        assert board.ep_square is None and board.halfmove_clock == 0 and board.fullmove_number == 5
        assert board.turn == chess.WHITE
        for right, rook in (("K", "h1"), ("Q", "a1"), ("k", "h8"), ("q", "a8")):  # rights follow the rooks
            if right in fen.split()[2]:
                assert board.piece_at(chess.parse_square(rook)) is not None, fen
    assert givers == {True, False}  # either side can be the one giving odds
    assert _core.odds_fen(MIDGAME, 3, 20, 7) == _core.odds_fen(MIDGAME, 3, 20, 7)  # seeded


def test_odds_fen_can_strip_everything_and_refuses_what_it_cannot_take() -> None:
    bare = [_core.odds_fen(core.STARTING_FEN, 39, 39, s) for s in range(5)]
    assert all(f is not None and abs(material_of_fen(f)) == 39 for f in bare)
    assert all(f.split()[2] in ("KQ", "kq") for f in bare)  # the stripped side lost its rooks' rights
    for bad in ((0, 5), (5, 40), (9, 3)):
        with pytest.raises(ValueError, match="1 <= min <= max <= 39"):
            _core.odds_fen(MIDGAME, *bad, 1)
    with pytest.raises(ValueError, match="invalid FEN 'nonsense'"):
        _core.odds_fen("nonsense", 3, 5, 1)


def test_odds_fen_never_returns_less_than_asked() -> None:
    kings_and_pawn = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"  # at most 1 pawn to take (from White)
    for seed in range(50):
        assert _core.odds_fen(kings_and_pawn, 3, 5, seed) is None


def test_actor_plays_odds_games_from_legal_lopsided_starts() -> None:
    settings = ActorSettings(games_in_flight=6, seed=5, restart_fraction=0.0, odds_fraction=1.0,
                             odds_material=(9, 30))
    actor = SelfPlayActor(settings)
    try:
        report = actor.play(UniformEvaluator(), visits=4, ply_cap=30, model_id="m", generation=0, games=8)
    finally:
        actor.close()
    assert report.games >= 8 and all(r.start_type == "odds" for r in report.records)
    for r in report.records:
        board = chess.Board(r.start_fen)
        assert board.is_valid() and not board.is_game_over(), r.start_fen
        assert r.prefix_moves == []  # every ply is searched and trained on
        assert [p.ply for p in r.plies if not p.is_cap_search] == list(range(len(r.moves)))
    rec.records_to_frame(report.records)  # the schema accepts the start type
    assert len(actor.archive) == 0  # odds games give no restart positions
    # natural-play diagnostics leave odds games out; they are counted apart
    assert sum(report.terminations.values()) == 0 and report.non_decisive_rate == 0.0
    assert report.odds.games == report.games
    assert report.odds.decisive == sum(r.is_decisive for r in report.records)
    assert report.odds.conversion == conversion_counts(report.records)
    # 9+ pawns taken after at most 8 random plies: nearly every start leads by 5+ (random plies trade some)
    lopsided = sum(abs(material_of_fen(r.start_fen)) >= 5 for r in report.records)
    assert lopsided >= 0.75 * report.games
    assert report.odds.conversion.opportunities >= lopsided


def test_mixed_starts_split_the_diagnostics_and_resume_as_odds() -> None:
    settings = ActorSettings(games_in_flight=8, seed=2, restart_fraction=0.0, odds_fraction=0.5)
    actor = SelfPlayActor(settings)
    try:
        report = actor.play(UniformEvaluator(), visits=4, ply_cap=24, model_id="m", generation=0, games=12)
        kinds = {r.start_type for r in report.records}
        assert kinds == {"odds", "random"}
        natural = [r for r in report.records if r.start_type == "random"]
        odds = [r for r in report.records if r.start_type == "odds"]
        assert report.terminations == termination_histogram(natural)
        assert report.odds.games == len(odds)
        assert report.conversion == conversion_counts(natural)
        handed = {p.game_id: p.start_type for p in actor.pending}
        assert "odds" in handed.values()
        more = actor.play(UniformEvaluator(), visits=4, ply_cap=24, model_id="m", generation=1,
                          games=len(handed) + 1)
        resumed = {r.game_id: r.start_type for r in more.records if r.game_id in handed}
        assert resumed and all(resumed[g] == handed[g] for g in resumed)
    finally:
        actor.close()


def test_odds_off_keeps_every_start_natural() -> None:
    actor = SelfPlayActor(ActorSettings(games_in_flight=4, seed=2, restart_fraction=0.0))
    try:
        report = actor.play(UniformEvaluator(), visits=4, ply_cap=20, model_id="m", generation=0, games=6)
    finally:
        actor.close()
    assert {r.start_type for r in report.records} == {"random"} and report.odds.games == 0


def test_bad_odds_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="odds_fraction must be in"):
        SelfPlayActor(ActorSettings(odds_fraction=1.5))
    with pytest.raises(ValueError, match="odds material"):
        SelfPlayActor(ActorSettings(odds_fraction=0.5, odds_material=(10, 5)))
    with pytest.raises(ValueError, match=r"odds_material must be \(min, max\) pawns, got \(5,\)"):
        SelfPlayActor(ActorSettings(odds_fraction=0.5, odds_material=(5,)))  # type: ignore[arg-type]


def test_a_pending_game_with_an_unknown_start_type_is_refused() -> None:
    data = {"game_id": "g-1", "start_fen": core.STARTING_FEN, "prefix_moves": [], "moves": ["e2e4"],
            "start_type": "handicap", "is_continuation": False}
    with pytest.raises(ValueError, match="pending game 'g-1': start_type must be one of .* got 'handicap'"):
        PendingGame.from_dict(data)
    assert PendingGame.from_dict({**data, "start_type": "odds"}).game().fen() != core.STARTING_FEN


def test_recipe_odds_settings(tmp_path) -> None:
    import yaml

    params = Path(__file__).resolve().parents[1] / "params.yaml"
    cfg = load_config(params, preset="cpu")
    assert 0 <= cfg.selfplay.odds_fraction <= 1
    raw = yaml.safe_load(params.read_text())
    raw["presets"]["cpu"]["selfplay"]["odds_min_material"] = 20
    raw["presets"]["cpu"]["selfplay"]["odds_max_material"] = 10
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="odds_min_material must be <= odds_max_material"):
        load_config(bad, preset="cpu")


def _summary(**extra: object) -> ActorSummary:
    return ActorSummary(**{"shard": "s.parquet", "actor": 0, "games": 6, "positions": 100, "searches": 100,
                           "seconds": 2.0, "terminations": {"checkmate": 1, "threefold_repetition": 3},
                           "label": "main", **extra})


def test_aggregate_counts_odds_games_apart() -> None:
    old = _summary(games=4)  # a sidecar written before odds games existed
    assert ActorSummary(**asdict(old)).odds_games == 0
    agg = aggregate([old])
    assert agg["non_decisive_rate"] == pytest.approx(0.75) and agg["odds_games"] == 0
    assert "odds_non_decisive_rate" not in agg and "odds_conversion" not in agg
    mixed = _summary(odds_games=2, odds_decisive=1, odds_conversion_opportunities=2, odds_conversion_converted=1)
    agg = aggregate([old, mixed])
    assert agg["games"] == 10  # every game, odds included
    assert agg["non_decisive_rate"] == pytest.approx(0.75)  # natural games only (8, 2 decisive)
    assert agg["odds_games"] == 2 and agg["odds_non_decisive_rate"] == pytest.approx(0.5)
    assert agg["odds_conversion"] == pytest.approx(0.5)
