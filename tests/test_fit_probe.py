"""The fit probe (chesszero.evaluate.fit_probe, reports/fit_probe.py) on hand-built shards."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from train_support import one_thread

from chesszero import core
from chesszero.config import load_config
from chesszero.evaluate.fit_probe import ending_scans, fit_curve, held_out_split, run_rows
from chesszero.model.network import ChessNet
from chesszero.replay.layout import ENDING_MATE, ENDING_STALEMATE
from chesszero.search.evaluators import OnnxEvaluator
from chesszero.selfplay.records import GameRecord, SearchedPly, write_shard

__all__ = ["one_thread"]  # autouse fixture
ROOT = Path(__file__).resolve().parents[1]
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def _game(gid: str, generation: int, seed: int, plies: int = 24) -> GameRecord:
    """A random game that Black resigns; every ply searched, 3/4 of the target on the move played."""
    rng = random.Random(seed)
    game, moves, searched = core.Game(START), [], []
    for ply in range(plies):
        legal = game.legal_uci()
        if len(legal) < 2:
            break
        pick, other = rng.sample(legal, 2)
        searched.append(SearchedPly(ply=ply, policy_ids=[game.action_of(pick), game.action_of(other)],
                                    policy_counts=[3.0, 1.0], policy_prior=[0.5, 0.5], policy_discarded=0.0,
                                    root_value=0.1, raw_value=0.0, policy_surprise=0.2, best_q=0.0, visits=4.0))
        game.push_uci(pick)
        moves.append(pick)
    return GameRecord(game_id=gid, model_id="m", generation=generation, start_type="random", start_fen=START,
                      prefix_moves=[], moves=moves, plies=searched, result="1-0", termination="resignation",
                      resigned_by="black", resign_threshold=-0.9, searches=len(searched))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fitrun")
    for g in (3, 4, 5):
        write_shard([_game(f"g{g}a", g, 10 * g), _game(f"g{g}b", g, 10 * g + 1)],
                    root / "shards" / f"gen_{g:04d}" / "s.parquet")
    return root


def test_rows_are_the_replay_rows_and_the_last_generation_is_held_out(run_dir: Path) -> None:
    cfg = load_config(preset="smoke")
    rows = run_rows(run_dir, 3, 5, cfg.replay)
    assert len(rows) == 6 * 24 and sorted(set(rows["generation"].tolist())) == [3, 4, 5]
    train, held = held_out_split(rows, 5)
    assert (len(train), len(held)) == (4 * 24, 2 * 24)
    assert set(held.generation.tolist()) == {5} and 5 not in set(train.generation.tolist())
    np.testing.assert_allclose(train.policy_probs[:, :2].sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="need rows of generation 9"):
        held_out_split(rows, 9)
    with pytest.raises(ValueError, match="no shards for generations 6..7"):
        run_rows(run_dir, 6, 7, cfg.replay)


def test_the_curve_fits_the_training_rows(run_dir: Path) -> None:
    cfg = load_config(preset="smoke", overrides={"train": {
        "optimizer": "adamw", "global_batch": 32, "lr": [[0, 0.003]], "reflection": "off"}})
    train, held = held_out_split(run_rows(run_dir, 3, 5, cfg.replay), 5)
    seen: list[int] = []
    models: list[torch.nn.Module] = []
    points = fit_curve(train, held, cfg.train, "2x16", steps=150, every=60, on_step=seen.append,
                       on_done=models.append)
    assert [p.step for p in points] == [0, 60, 120, 150] and seen == list(range(1, 151))
    assert len(models) == 1 and isinstance(models[0], ChessNet)  # the trained network, once, at the end
    first, last = points[0], points[-1]
    assert first.train.rows == len(train) and first.held_out.rows == len(held)
    # 96 training rows, one move in four pairs carries 3/4 of the target: memorised
    print([(p.step, round(p.train.top1, 3), round(p.train.policy_loss, 3)) for p in points])
    assert last.train.top1 > max(0.5, first.train.top1 + 0.4)
    assert last.train.policy_loss < min(first.train.policy_loss - 1.0, last.held_out.policy_loss - 2.0)
    # held-out random moves cannot be predicted beyond chance-level wins
    assert last.held_out.top1 < 0.5
    with pytest.raises(ValueError, match="cannot fill a batch of 32"):
        fit_curve(held_out_split(run_rows(run_dir, 3, 4, cfg.replay), 4)[0].__class__(
            **{k: v[:10] for k, v in vars(train).items()}), held, cfg.train, "2x16", steps=1, every=1)


def test_the_command_prints_and_writes_the_curve(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "curve.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "reports" / "fit_probe.py"), str(run_dir), "3", "5", "--size", "2x16",
         "--steps", "4", "--every", "2", "--preset", "smoke", "--set", "train.global_batch=16",
         "--json", str(out), "--onnx", str(tmp_path / "fit.onnx")], capture_output=True, text=True, timeout=300,
        cwd=ROOT)
    assert done.returncode == 0, done.stderr
    logits, wdl = OnnxEvaluator(tmp_path / "fit.onnx").evaluate(np.zeros((2, 52, 8, 8), np.float32))[:2]
    assert logits.shape == (2, 1880) and np.allclose(wdl.sum(axis=1), 1.0, atol=1e-5)
    assert "96 training rows (generations 3..4), 48 held out (generation 5); 2x16, sgd, batch 16" in done.stdout
    curve = json.loads(out.read_text())
    assert [p["step"] for p in curve["points"]] == [0, 2, 4]
    bad = subprocess.run([sys.executable, str(ROOT / "reports" / "fit_probe.py"), str(run_dir), "3", "9",
                          "--preset", "smoke"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.startswith("fit_probe: ") and "gen" in bad.stderr
    size = subprocess.run([sys.executable, str(ROOT / "reports" / "fit_probe.py"), str(run_dir), "3", "5",
                           "--size", "2-16", "--preset", "smoke"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert size.returncode == 2 and "argument --size: model size must look like" in size.stderr
    assert "training rows" not in size.stdout  # refused before any shard is read


def _ending_game(gid: str, generation: int, fen: str, move: str, result: str, termination: str) -> GameRecord:
    game = core.Game(fen)
    other = next(u for u in game.legal_uci() if u != move)
    ply = SearchedPly(ply=0, policy_ids=[game.action_of(move), game.action_of(other)], policy_counts=[3.0, 1.0],
                      policy_prior=[0.5, 0.5], policy_discarded=0.0, root_value=0.5, raw_value=0.0,
                      policy_surprise=0.2, best_q=0.5, visits=4.0)
    return GameRecord(game_id=gid, model_id="m", generation=generation, start_type="odds", start_fen=fen,
                      prefix_moves=[], moves=[move], plies=[ply], result=result, termination=termination,
                      searches=1)


def test_the_probe_scores_the_top_move_where_mates_and_stalemates_are_on_the_board(tmp_path: Path) -> None:
    """``--endings``: the positions it scores are exactly the rows whose ``endings``
    bits say a mating / stalemating move exists (two ways of finding them agree)."""
    for g in (3, 4, 5):
        write_shard([_game(f"g{g}a", g, 10 * g),
                     _ending_game(f"m{g}", g, "7k/8/5K2/8/8/8/8/6Q1 w - - 0 1", "g1g7", "1-0", "checkmate"),
                     _ending_game(f"s{g}", g, "7k/8/6K1/8/8/8/P3B3/8 w - - 0 1", "e2c4", "1/2-1/2", "stalemate")],
                    tmp_path / "shards" / f"gen_{g:04d}" / "s.parquet")
    cfg = load_config(preset="smoke", overrides={"train": {"global_batch": 16, "reflection": "off"}})
    rows = run_rows(tmp_path, 3, 5, cfg.replay)
    train, held = held_out_split(rows, 5)
    scans = ending_scans(tmp_path, 3, 5)
    for scan, part in zip(scans, (train, held), strict=True):
        assert scan.rows == len(part)
        assert len(scan.mates) == int(((part.endings & ENDING_MATE) != 0).sum()) >= 1
        assert len(scan.stalemates) == int(((part.endings & ENDING_STALEMATE) != 0).sum()) >= 2
    points = fit_curve(train, held, cfg.train, "2x16", steps=2, every=2, endings=scans)
    for p in points:
        for e, scan in ((p.train_endings, scans[0]), (p.held_out_endings, scans[1])):
            assert (e.mate_positions, e.stalemate_positions) == (len(scan.mates), len(scan.stalemates))
            assert 0.0 <= e.mate_top <= 1.0 and 0.0 <= e.stalemate_top <= 1.0 and 0.0 < e.stalemate_mass < 1.0
    assert fit_curve(train, held, cfg.train, "2x16", steps=0, every=1)[0].train_endings is None

    done = subprocess.run(
        [sys.executable, str(ROOT / "reports" / "fit_probe.py"), str(tmp_path), "3", "5", "--size", "2x16",
         "--steps", "2", "--every", "2", "--preset", "smoke", "--set", "train.global_batch=16", "--endings",
         "--set", "train.loss_weights.stalemate_rows=8"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    n_mates, n_stale = len(scans[0].mates), len(scans[0].stalemates)
    assert f"of {n_mates} / " in done.stdout and f"of {n_stale} | held out" in done.stdout
