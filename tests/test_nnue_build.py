"""``chesszero nnue build`` on a tiny fake teacher campaign (game-record shards
written here: scripted games with known results and a few self-play games
of the uniform evaluator), with a scripted teacher whose value is the
material balance: quiet-position extraction, deduplication and the held-out
split, the teacher's labels and the flatness check, resumption after an
interrupt, and bad parameters. The parts that need the native NNUE bindings
(features, alpha-beta games, loading the student) are skipped until the core
has them; they are written to run as they are once it does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import chess
import numpy as np
import pytest
from rich.console import Console

from chesszero import _core, core
from chesszero.config import load_config
from chesszero.nnue import native
from chesszero.nnue.build import BuildRequest, run_build, search_net
from chesszero.nnue.fileformat import file_size
from chesszero.nnue.labels import check_values, p_label, p_search, searched_values, value_head
from chesszero.nnue.paths import latest_student
from chesszero.nnue.positions import (
    HOLDOUT,
    SOURCE_SEARCH,
    PositionRows,
    finish,
    key_fraction,
    read_teacher_games,
    teacher_campaign,
)
from chesszero.nnue.stages import Stage
from chesszero.search.assist import material_balance, wdl_of_value
from chesszero.search.evaluators import ScriptedEvaluator, UniformEvaluator
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor
from chesszero.selfplay.records import GameRecord, SearchedPly, write_shard

HAS_FEATURES = hasattr(_core, "nnue_features_batch")
HAS_ALPHABETA = hasattr(_core, "AlphaBeta")
FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
# 1. e4 d5 2. exd5 (a capture: not quiet) Qxd5 (a capture) 3. Nc3 Qe5+ 4. (in check: not quiet) Be2, capped
CAPPED = ["e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5e5", "f1e2"]


def _ply(game: core.Game, ply: int, best: str, *, cap: bool = False, value: float = 0.0) -> SearchedPly:
    """A searched position whose most visited move is `best`."""
    others = [int(a) for a in game.legal_actions() if int(a) != game.action_of(best)][:2]
    ids = [game.action_of(best), *others]
    return SearchedPly(ply=ply, policy_ids=ids, policy_counts=[10.0] + [1.0] * len(others),
                       policy_prior=[1.0 / len(ids)] * len(ids), policy_discarded=0.0, root_value=value,
                       raw_value=value, policy_surprise=0.1, best_q=value, visits=10 + len(others), is_cap_search=cap)


def scripted_games() -> list[GameRecord]:
    game, plies = core.Game(), []
    for i, uci in enumerate(FOOLS_MATE):
        plies.append(_ply(game, i, uci))
        game.push_uci(uci)
    mate = GameRecord(game_id="fool", model_id="m", generation=0, start_type="random", start_fen=core.STARTING_FEN,
                      prefix_moves=[], moves=FOOLS_MATE, plies=plies, result="0-1", termination="checkmate",
                      searches=len(plies))
    game, plies = core.Game(), []
    for i, uci in enumerate(CAPPED):
        plies.append(_ply(game, i, uci))
        game.push_uci(uci)
    plies.append(_ply(game, len(CAPPED), "e5g5", cap=True, value=0.6))  # Black to move at the cut, +0.6
    capped = GameRecord(game_id="capped", model_id="m", generation=0, start_type="random",
                        start_fen=core.STARTING_FEN, prefix_moves=[], moves=CAPPED, plies=plies, result="1/2-1/2",
                        termination="ply_cap", cap_value=0.6, ply_cap=len(CAPPED), searches=len(plies))
    return [mate, capped]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/fake: a shard of scripted games and a shard of uniform self-play games; returns the root."""
    root = tmp_path_factory.mktemp("root")
    folder = root / "runs" / "fake"
    write_shard(scripted_games(), folder / "shards" / "gen_0000" / "scripted.parquet")
    actor = SelfPlayActor(ActorSettings(games_in_flight=4, seed=5))
    try:
        report = actor.play(UniformEvaluator(), visits=4, ply_cap=50, model_id="m", generation=1, games=8)
    finally:
        actor.close()
    write_shard(report.records, folder / "shards" / "gen_0001" / "selfplay.parquet")
    (folder / "state.json").write_text(json.dumps({
        "admitted_shards": ["shards/gen_0000/scripted.parquet", "shards/gen_0001/selfplay.parquet"],
        "active_artifact": None, "mlflow_run_id": None}))
    return root


def material_teacher() -> ScriptedEvaluator:
    """A teacher whose value is tanh(material balance / 3) for the side to move."""
    def fn(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        wdl = wdl_of_value(np.tanh(material_balance(planes) / 3.0))
        return np.zeros((len(planes), int(core.NUM_ACTIONS)), np.float32), wdl
    return ScriptedEvaluator(fn, record=False)


def recipe(**nnue: object):  # -> Config
    return load_config("params.yaml", preset="smoke", overrides={
        "nnue.max_games": None, "nnue.holdout_fraction": 0.2, "nnue.teacher_search_fraction": 0.05,
        "nnue.search_games": 0, "nnue.search_label_weight": 0.0, **{f"nnue.{k}": v for k, v in nnue.items()}})


def test_positions_are_the_quiet_searched_ones_with_their_results(campaign: Path) -> None:
    teacher = teacher_campaign(campaign, "fake")
    rows = PositionRows()
    assert read_teacher_games(teacher.shards[:1], rows) == 2
    a = rows.arrays()
    boards = [chess.Board(f) for f in a["fen"]]
    # fool's mate: all four positions are quiet; Black won
    assert list(a["best"][:4]) == FOOLS_MATE
    np.testing.assert_array_equal(a["result"][:4], [0.0, 1.0, 0.0, 1.0])
    # the capped game: exd5 and Qxd5 capture, Be2 answers a check; the cut position is kept
    assert list(a["best"][4:]) == ["e2e4", "d7d5", "b1c3", "d5e5", "e5g5"]
    assert rows.seen == 4 + len(CAPPED) + 1
    # cap value +0.6 for Black (to move at the cut): White scores 0.2
    np.testing.assert_allclose(a["result"][4:], [0.2, 0.8, 0.2, 0.8, 0.8], rtol=1e-6)
    for board, best in zip(boards, a["best"], strict=True):
        assert not board.is_check() and not board.is_capture(chess.Move.from_uci(best))
    assert [int(k) for k in a["key"][:2]] == [core.Game().key, _after(["f2f3"]).key]
    np.testing.assert_array_equal(a["planes"][0], core.Game().encode_packed())


def _after(moves: list[str]) -> core.Game:
    game = core.Game()
    for uci in moves:
        game.push_uci(uci)
    return game


def test_all_shards_dedup_by_key_and_hold_out_by_key_hash(campaign: Path) -> None:
    teacher = teacher_campaign(campaign, "fake")
    rows = PositionRows()
    read_teacher_games(teacher.shards, rows)
    read_teacher_games(teacher.shards, rows)  # every position twice
    out = finish(rows.arrays(), holdout_fraction=0.2)
    once = PositionRows()
    read_teacher_games(teacher.shards, once)
    assert len(np.unique(out["key"])) == len(out["key"]) == len(np.unique(once.arrays()["key"]))
    assert out["duplicates"].min() >= 2
    # the start position appears in both scripted games, with White scoring 0 and 0.2: averaged
    start = int(np.flatnonzero(out["key"] == np.uint64(core.Game().key))[0])
    assert out["result"][start] == pytest.approx(0.1)
    np.testing.assert_array_equal(out["holdout"], key_fraction(out["key"], HOLDOUT) < 0.2)
    assert 0 < out["holdout"].sum() < len(out["key"])
    capped = finish(rows.arrays(), holdout_fraction=0.2, max_positions=20)
    assert len(capped["key"]) == 20 and set(capped["key"]) <= set(out["key"])
    assert np.isnan(out["search_cp"]).all()  # teacher rows carry no search score


def test_search_scores_are_averaged_over_the_duplicates_that_have_one() -> None:
    rows = PositionRows()
    for cp in (100.0, float("nan"), 300.0):
        rows.offer(core.Game(), "e2e4", 0.5, SOURCE_SEARCH, cp)
    rows.offer(_after(["e2e4"]), "e7e5", 0.5, SOURCE_SEARCH)
    out = finish(rows.arrays(), holdout_fraction=0.2)
    np.testing.assert_array_equal(out["duplicates"], [3, 1])
    assert out["search_cp"][0] == pytest.approx(200.0) and np.isnan(out["search_cp"][1])


def test_the_label_mixes_search_and_teacher_where_the_search_scored() -> None:
    labels = {"p_teacher": np.array([0.2, 0.4, 0.9], np.float32),
              "p_search": p_search(np.array([0.0, np.nan, 4000.0]))}
    np.testing.assert_allclose(labels["p_search"][[0, 2]], [0.5, 1.0 / (1.0 + np.exp(-5.0))], rtol=1e-6)
    np.testing.assert_allclose(p_label(labels, 0.75), [0.75 * 0.5 + 0.25 * 0.2, 0.4,
                                                       0.75 * labels["p_search"][2] + 0.25 * 0.9], rtol=1e-6)
    np.testing.assert_array_equal(p_label(labels, 0.0), labels["p_teacher"])
    np.testing.assert_allclose(p_label(labels, 1.0)[[0, 2]], labels["p_search"][[0, 2]])
    with pytest.raises(ValueError, match="no alpha-beta search scores"):
        p_label({"p_teacher": labels["p_teacher"]}, 0.5)
    with pytest.raises(ValueError, match="search_label_weight"):
        p_label(labels, 1.5)


def test_teacher_campaign_errors_name_the_campaign(campaign: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no campaign 'nope'"):
        teacher_campaign(campaign, "nope")
    (tmp_path / "runs" / "empty").mkdir(parents=True)
    with pytest.raises(ValueError, match="'empty' has no game records"):
        teacher_campaign(tmp_path, "empty")


def test_value_check_tells_a_flat_teacher_from_a_material_one(campaign: Path) -> None:
    rows = PositionRows()
    read_teacher_games(teacher_campaign(campaign, "fake").shards, rows)
    planes = rows.arrays()["planes"]
    values, material = value_head(material_teacher(), planes, batch=64)
    assert material.std() > 0 and np.all(np.abs(values) <= 1.0)
    good = check_values(values, material, min_std=0.1, min_corr=0.3)
    assert not good.flat and good.material_corr > 0.85  # tanh bends the line
    flat_values, _ = value_head(UniformEvaluator(), planes, batch=64)
    flat = check_values(flat_values, material, min_std=0.1, min_corr=0.3)
    assert flat.flat and flat.value_std == 0.0 and flat.material_corr is None
    assert "FLAT" in flat.message() and "draw cycle" in flat.message()


def test_teacher_search_finds_a_mate_the_value_head_does_not_see() -> None:
    cfg = load_config("params.yaml", preset="smoke")
    from chesszero.campaign.search_settings import evaluation_search

    mate_in_one = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8#
    values = searched_values(UniformEvaluator(), [mate_in_one, core.STARTING_FEN], visits=32,
                             options=evaluation_search(cfg), slots=2)
    assert values[0] > 0.9 and abs(values[1]) < 0.5


def _console() -> Console:
    return Console(file=open(os.devnull, "w"), record=True, width=200)  # noqa: SIM115 - kept by the console


def test_build_resumes_after_an_interrupt_and_warns_on_a_flat_teacher(campaign: Path, tmp_path: Path) -> None:
    class Killed(Exception):
        pass

    def killed_teacher() -> ScriptedEvaluator:
        def fn(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            raise Killed
        return ScriptedEvaluator(fn)

    teacher = teacher_campaign(campaign, "fake")
    req = BuildRequest(campaign, "fake-student", recipe(), teacher, tmp_path / "report", evaluator=killed_teacher,
                       evaluator_id="material", track=False)
    with pytest.raises(Killed):  # interrupted while labelling: the positions stage is done
        run_build(req, console=_console(), progress=False)
    positions = Stage(req.work, "positions")
    assert positions.meta_path.is_file() and not Stage(req.work, "labels").meta_path.is_file()
    stamp = positions.arrays_path.stat().st_mtime_ns
    console = _console()
    req = BuildRequest(campaign, "fake-student", recipe(), teacher, tmp_path / "report",
                       evaluator=material_teacher, evaluator_id="material", track=HAS_FEATURES)
    if not HAS_FEATURES:
        with pytest.raises(native.MissingBindingError, match="nnue_features_batch"):
            run_build(req, console=console, progress=False)
    else:
        summary = run_build(req, console=console, progress=False)
        _check_summary(req, summary)
    assert positions.arrays_path.stat().st_mtime_ns == stamp  # reused, not rebuilt
    text = console.export_text()
    assert "reusing" in text and "WARNING" not in text
    labels = Stage(req.work, "labels").load()
    assert np.isnan(labels["searched"]).sum() < len(labels["searched"])  # the searched subset
    assert np.all((labels["p_teacher"] >= 0) & (labels["p_teacher"] <= 1))
    # a flat teacher (another teacher: the labels are redone) is reported loudly
    console = _console()
    flat = BuildRequest(campaign, "fake-student", recipe(), teacher, tmp_path / "report",
                        evaluator=UniformEvaluator, evaluator_id="uniform", track=False)
    if not HAS_FEATURES:
        with pytest.raises(native.MissingBindingError):
            run_build(flat, console=console, progress=False)
    else:
        run_build(flat, console=console, progress=False)
    text = console.export_text()
    assert "WARNING" in text and "FLAT" in text


def _check_summary(req: BuildRequest, summary: dict) -> None:
    """A finished build: the student loads in the core, the report and MLflow run exist; a rerun is a no-op."""
    student = req.work / "student.nnue"
    assert summary["student"] == str(student) and summary["bytes"] == student.stat().st_size == file_size(16)
    assert summary["positions"]["positions"] > 100 and summary["positions"]["holdout"] > 0
    assert summary["teacher_values"]["check"]["material_corr"] > 0.85
    assert summary["export"]["native_check"]["checked"] and summary["export"]["native_check"]["max_abs_diff"] == 0
    assert summary["holdout_loss"] < summary["training"]["constant_holdout_loss"]
    for name in ("summary.json", "nnue.md", "student.nnue"):
        assert (req.report_dir / name).is_file()
    assert native.NativeNet(student).hidden == 16
    from mlflow.tracking import MlflowClient

    from chesszero.campaign.tracking import tracking_uri

    run = MlflowClient(tracking_uri(req.root)).get_run(summary["mlflow_run_id"])
    assert run.data.tags["chesszero.kind"] == "nnue" and run.data.params["nnue.lambda"] == "0.2"
    assert "nnue/holdout_loss_quantised" in run.data.metrics
    stamp = student.stat().st_mtime_ns
    again = run_build(req, console=_console(), progress=False)
    assert student.stat().st_mtime_ns == stamp
    assert again["mlflow_run_id"] == summary["mlflow_run_id"]  # the same student: the same run
    from dataclasses import replace

    retrained = run_build(replace(req, cfg=recipe(epochs=3)), console=_console(), progress=False)
    assert retrained["mlflow_run_id"] != summary["mlflow_run_id"]  # another student: its own run
    assert run.info.status == "FINISHED"


def test_cli_refuses_bad_parameters(campaign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from chesszero.cli import main

    base = ["nnue", "build", "--preset", "smoke", "--root", str(campaign), "--no-mlflow", "--quiet"]
    assert main([*base, "--teacher-campaign", "nope"]) == 2
    assert "no campaign 'nope'" in capsys.readouterr().err
    assert main([*base, "--teacher-campaign", "fake", "--lambda", "1.5"]) == 2
    assert "nnue.lambda" in capsys.readouterr().err
    assert main([*base, "--teacher-campaign", "fake", "--hidden", "100"]) == 2
    assert "multiple of 16" in capsys.readouterr().err
    # the fake campaign has no published artifact: labelling cannot start, and says so
    assert main([*base, "--teacher-campaign", "fake", "--name", "x"]) == 2
    assert "no published artifact" in capsys.readouterr().err
    assert not (campaign / "runs" / "nnue" / "x").exists()  # refused before any work


def test_latest_student_is_the_newest_file(tmp_path: Path) -> None:
    assert latest_student(tmp_path) is None
    retained = tmp_path / "reports" / "nnue" / "t-student" / "student.nnue"
    retained.parent.mkdir(parents=True)
    retained.write_bytes(b"x")
    (tmp_path / "reports" / "nnue" / "ablations").mkdir()
    (tmp_path / "reports" / "nnue" / "ablations" / "student.nnue").write_bytes(b"x")
    assert latest_student(tmp_path) == retained  # a fresh clone: the student kept in git
    for i, name in enumerate(["b", "a", "c"]):
        path = tmp_path / "runs" / "nnue" / name / "student.nnue"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"x")
        os.utime(path, ns=(10**18 + i * 10**9, 10**18 + [5, 9, 1][i] * 10**9))
    assert latest_student(tmp_path) == tmp_path / "runs" / "nnue" / "a" / "student.nnue"
    assert search_net(tmp_path, "latest") == latest_student(tmp_path)
    assert search_net(tmp_path, "latest", build="a") == tmp_path / "runs" / "nnue" / "b" / "student.nnue"
    assert search_net(tmp_path, "control") is None
    with pytest.raises(ValueError, match="nnue.search_net"):
        search_net(tmp_path, str(tmp_path / "missing.nnue"))


@pytest.mark.skipif(not HAS_ALPHABETA, reason="the native core has no _core.AlphaBeta yet (docs/nnue.md section 7)")
def test_alpha_beta_games_add_quiet_positions_with_results() -> None:
    from chesszero.nnue.searchgames import SearchGameSettings, play_search_games

    rows = PositionRows()
    settings = SearchGameSettings(games=2, net=None, depth=2, nodes=0, random_plies=4, max_plies=30, threads=2,
                                  seed=0)
    assert play_search_games(settings, rows) == 2
    a = rows.arrays()
    assert len(a["fen"]) > 10 and np.all(a["source"] == SOURCE_SEARCH)
    for fen, best in zip(a["fen"], a["best"], strict=True):
        board = chess.Board(fen)
        assert not board.is_check() and not board.is_capture(chess.Move.from_uci(best))
    again = PositionRows()
    play_search_games(settings, again)  # seeded: the same games whatever the threads did
    np.testing.assert_array_equal(again.arrays()["key"], a["key"])
    # each row carries the score the search reported for its move, mates clipped to +-2000
    scores = a["search_cp"]
    assert np.isfinite(scores).mean() > 0.9 and np.nanmax(np.abs(scores)) <= 2000.0
    np.testing.assert_array_equal(again.arrays()["search_cp"], scores)


@pytest.mark.skipif(not (HAS_ALPHABETA and HAS_FEATURES), reason="needs _core.AlphaBeta and the NNUE features")
def test_search_labels_take_the_games_scores_and_search_the_teachers_positions(campaign: Path,
                                                                               tmp_path: Path) -> None:
    from chesszero.nnue.searchgames import SearchGameSettings, search_scores

    teacher = teacher_campaign(campaign, "fake")
    cfg = recipe(search_games=2, search_label_weight=1.0, search_net="control", search_nodes=500)
    req = BuildRequest(campaign, "search-labels", cfg, teacher, tmp_path / "report", evaluator=material_teacher,
                       evaluator_id="material", track=False)
    summary = run_build(req, console=_console(), progress=False)
    pos, lab = Stage(req.work, "positions").load(), Stage(req.work, "labels").load()
    games = pos["source"] == SOURCE_SEARCH
    assert games.any() and (~games).any()
    known = games & np.isfinite(pos["search_cp"])
    np.testing.assert_array_equal(lab["search_cp"][known], pos["search_cp"][known])  # the games' own scores
    rest = np.flatnonzero(~known)
    settings = SearchGameSettings(games=0, net=None, depth=0, nodes=500, random_plies=0, max_plies=1, threads=1,
                                  seed=0)
    np.testing.assert_array_equal(lab["search_cp"][rest], search_scores(settings, [str(f) for f in pos["fen"][rest]]))
    np.testing.assert_array_equal(lab["p_search"], p_search(lab["search_cp"]))
    made = summary["teacher_values"]["search_labels"]
    assert made["from_games"] == int(known.sum()) and made["searched"] == len(rest)
    assert made["corr_with_teacher"] > 0.5  # the control's search and a material teacher agree
    assert summary["export"]["mae_cp_vs_search_quantised"] is not None
    # another weight retrains on the same labels
    stamp = Stage(req.work, "labels").arrays_path.stat().st_mtime_ns
    student = (req.work / "student.nnue").read_bytes()
    half = BuildRequest(campaign, "search-labels", recipe(search_games=2, search_label_weight=0.5,
                                                          search_net="control", search_nodes=500),
                        teacher, tmp_path / "report", evaluator=material_teacher, evaluator_id="material", track=False)
    run_build(half, console=_console(), progress=False)
    assert Stage(req.work, "labels").arrays_path.stat().st_mtime_ns == stamp
    assert (req.work / "student.nnue").read_bytes() != student


def test_cli_eval_prints_the_cores_evaluation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from chesszero.cli import main
    from chesszero.nnue.fileformat import write_nnue
    from chesszero.nnue.model import NnueModel
    from chesszero.nnue.quant import evaluate_int, quantise

    torch.manual_seed(0)
    q = quantise(NnueModel(16).to_float_net())
    net = write_nnue(tmp_path / "runs" / "nnue" / "x" / "student.nnue", q)
    fens = [core.STARTING_FEN, "4k3/8/8/8/8/8/8/3QK3 b - - 0 1"]
    code = main(["nnue", "eval", "--root", str(tmp_path), *fens])  # the newest student by default
    out, err = capsys.readouterr()
    if not hasattr(_core, "NnueNet") or not HAS_FEATURES:
        assert code == 1 and ("NnueNet" in err or "nnue_features_batch" in err)
        return
    assert code == 0
    stm, nstm = native.features_batch(fens)
    assert [int(line.split("\t")[0]) for line in out.splitlines()] == list(evaluate_int(q, stm, nstm))
    assert main(["nnue", "eval", "--net", str(net.with_name("none.nnue")), fens[0]]) == 2


@pytest.mark.skipif(not (HAS_ALPHABETA and HAS_FEATURES), reason="needs _core.AlphaBeta and the NNUE features")
def test_a_second_round_searches_with_the_first_rounds_student(campaign: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from chesszero.fsio import file_sha256

    teacher = teacher_campaign(campaign, "fake")
    cfg = recipe(search_games=2, search_label_weight=1.0, search_net="control", search_nodes=300, rounds=2)
    req = BuildRequest(campaign, "two-rounds", cfg, teacher, tmp_path / "report", evaluator=material_teacher,
                       evaluator_id="material", track=False)
    console = _console()
    summary = run_build(req, console=console, progress=False)
    first = req.work / "round-1" / "student.nnue"
    assert first.is_file() and (req.work / "student.nnue").is_file()
    assert [r["search_net"] for r in summary["rounds"]] == ["control", str(first.relative_to(campaign))]
    assert summary["positions"]["search"]["net"] == file_sha256(first)  # round 2's games: round 1's student
    own = Stage(req.work, "positions").load()
    assert Stage(req.work / "round-1", "positions").load()["search_cp"].size > 0
    trained = summary["training"]  # round 2 trains on both rounds' positions
    assert trained["rounds_pooled"] == 2 and trained["train_positions"] > int((~own["holdout"]).sum())
    assert summary["recipe"]["search_net"] == str(first) and "round 2 of 2" in console.export_text()
    assert latest_student(campaign) != first  # a round's student is not a build's
    assert "Bootstrap rounds" in (tmp_path / "report" / "nnue.md").read_text()
    from chesszero.nnue.build import _search, round_request

    latest = replace(req, cfg=recipe(search_games=2, search_label_weight=1.0, search_net="latest", rounds=2))
    newest = latest_student(campaign)
    assert newest == req.work / "student.nnue"  # just written: the newest of all builds' students
    found = _search(round_request(latest, 1, None))[0].net
    assert found is not None and found.parent.parent == newest.parent.parent and found != newest  # not its own
    stamp = (req.work / "student.nnue").stat().st_mtime_ns  # a rerun redoes nothing
    run_build(req, console=_console(), progress=False)
    assert (req.work / "student.nnue").stat().st_mtime_ns == stamp
