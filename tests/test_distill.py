"""Distillation (issue 11): the student's loss under each supervision source,
snapshot rows and the held-out split, and a smoke-scale distillation whose
student passes the fidelity gate, plays its teacher and a ladder rung, is
reported and tracked in MLflow linked to the teacher's run, and resumes."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from campaign_support import make_root
from publish_support import trained_net
from train_support import make_raw_rows, make_rows

from chesszero.config import Supervision, load_config
from chesszero.model import ChessNet
from chesszero.train import Trainer, compute_loss, to_train_batch
from chesszero.train.distill import HOLDOUT_EVERY, DistillLoss, snapshot_rows, split_holdout


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _snapshot(tmp: Path, out: Path, rows: np.ndarray, *, store: str = "replay.bin") -> Path:
    from chesszero.replay import ReplayStore
    from chesszero.replay.snapshot import write_snapshot

    with ReplayStore.create(tmp / store, capacity=4 * len(rows), logical_capacity=4 * len(rows)) as s:
        s.append(rows)
        write_snapshot(s, out)
    return out


def test_distill_loss_under_each_supervision_source() -> None:
    cfg = load_config("params.yaml", preset="smoke")
    weights = cfg.train.loss_weights
    torch.manual_seed(1)  # not the trainer's seed: the trained student below starts elsewhere
    teacher = ChessNet("1x8").eval()
    with torch.no_grad():  # a peaked teacher (fresh policy heads are near-flat)
        for p in teacher.policy_head.parameters():
            p.mul_(8.0)
    batch = to_train_batch(make_rows(12, seed=3))
    student = copy.deepcopy(teacher)
    with torch.no_grad():
        out = student(batch.planes)
    replay = DistillLoss(None, Supervision.REPLAY, weights)(out, batch)
    assert torch.allclose(replay.total, compute_loss(out, batch, weights).total)
    # A student identical to its teacher: zero KL and length terms; the value term is the teacher's entropy.
    same = DistillLoss(teacher, Supervision.TEACHER, weights)(out, batch)
    assert abs(float(same.policy)) < 1e-5 and abs(float(same.next_policy)) < 1e-5 and float(same.length) == 0
    with torch.no_grad():
        p = torch.softmax(teacher(batch.planes).wdl, dim=1)
    assert math.isclose(float(same.value), float(-(p * p.log()).sum(dim=1).mean()), rel_tol=1e-5)
    # A different student: positive KL; `mix` interpolates head by head; temperature scales by T^2.
    other = ChessNet("1x8")
    with torch.no_grad():
        out2 = other(batch.planes)
    t = DistillLoss(teacher, Supervision.TEACHER, weights)(out2, batch)
    r = DistillLoss(None, Supervision.REPLAY, weights)(out2, batch)
    m = DistillLoss(teacher, Supervision.MIX, weights, teacher_weight=0.25)(out2, batch)
    assert float(t.policy) > 1e-3
    for head in ("total", "policy", "value", "next_policy", "length"):
        expect = 0.25 * getattr(t, head) + 0.75 * getattr(r, head)
        assert torch.allclose(getattr(m, head), expect, atol=1e-6), head
    with pytest.raises(ValueError, match="needs a teacher"):
        DistillLoss(None, Supervision.TEACHER, weights)
    # The trainer takes the loss: one step under teacher supervision moves the student toward the teacher.
    train_cfg = cfg.train.model_copy(update={"global_batch": 12, "lr": type(cfg.train.lr)([(0, 0.05)])})
    trainer = Trainer(train_cfg, "1x8", loss=DistillLoss(teacher, Supervision.TEACHER, weights))
    def kl() -> float:
        with torch.no_grad():
            return float(DistillLoss(teacher, Supervision.TEACHER, weights)(trainer.model(batch.planes), batch).policy)

    before = kl()
    for _ in range(5):
        trainer.train_step(batch)
    assert kl() < before


def test_snapshot_rows_join_snapshots_once_and_hold_out_every_nth(tmp_path: Path) -> None:
    raw = make_raw_rows(60, seed=1)
    first = _snapshot(tmp_path, tmp_path / "a", raw[:40], store="a.bin")
    from chesszero.replay import ReplayStore
    from chesszero.replay.snapshot import write_snapshot

    with ReplayStore.create(tmp_path / "b.bin", capacity=100, logical_capacity=100) as s:
        s.append(raw[:40])
        s.append(raw[40:])
        second = write_snapshot(s, tmp_path / "b").path
    rows = snapshot_rows([second, first])
    assert list(rows.seq) == list(range(60))  # the 40 shared rows once, oldest first
    np.testing.assert_array_equal(rows.planes, raw["planes"])
    train, held = split_holdout(rows)
    assert len(held) == 60 // HOLDOUT_EVERY and all(held.seq % HOLDOUT_EVERY == HOLDOUT_EVERY - 1)
    assert len(train) + len(held) == 60 and not set(train.seq) & set(held.seq)
    with pytest.raises(ValueError, match="at least one replay snapshot"):
        snapshot_rows([])


def test_cli_distill_names_a_missing_teacher_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from chesszero.cli import main

    assert main(["distill", "--preset", "smoke", "--teacher-campaign", "nope", "--root", str(tmp_path)]) == 2
    assert "no campaign 'nope'" in capsys.readouterr().err


def check_match(m: dict, saved: Path) -> None:
    """A match summary agrees with its saved games (JSON and PGN): score =
    (W + D/2) / games in [0, 1], and the rating inside its interval (a bound,
    after a score of 0 or 1, has no interval on its open side)."""
    import chess.pgn

    data = json.loads(saved.read_text())
    assert len(data["games"]) == m["games"] and data["first"] == m["student"]
    tally = [0, 0, 0]
    with saved.with_suffix(".pgn").open() as f:
        while (game := chess.pgn.read_game(f)) is not None:
            result, white = game.headers["Result"], game.headers["White"] == data["first"]
            tally[1 if result == "1/2-1/2" else 0 if (result == "1-0") == white else 2] += 1
    assert tuple(tally) == (m["wins"], m["draws"], m["losses"]), (tally, m)
    assert sum(g["score"] for g in data["games"]) == m["wins"] + m["draws"] / 2
    assert 0 <= m["score"] <= 1 and m["score"] == pytest.approx((m["wins"] + m["draws"] / 2) / m["games"])
    assert sum(m["pentanomial"]) == m["games"] // 2
    if m["elo_is_bound"]:
        assert m["score"] in (0.0, 1.0) and math.isfinite(m["elo"])
        assert (m["elo_lower"] if m["score"] == 1.0 else m["elo_upper"]) == m["elo"]
    else:
        assert m["elo_lower"] <= m["elo"] <= m["elo_upper"], m


@pytest.mark.slow
def test_smoke_distillation_publishes_a_gated_student_that_plays_teacher_and_ladder(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from chesszero.campaign import metrics as M
    from chesszero.campaign.distill import (
        TAG_PARENT,
        TAG_TEACHER_RUN,
        DistillRequest,
        Teacher,
        run_distill,
    )
    from chesszero.campaign.tracking import Tracker, tracking_uri
    from chesszero.publish import load_artifact

    root = make_root(tmp_path / "root")
    cfg = load_config(root / "params.yaml", preset="smoke")
    teacher_ckpt = root / "runs" / "teacher" / "train.pt"
    teacher_trainer = Trainer(cfg.train, cfg.model.size)
    teacher_trainer.model.load_state_dict(trained_net(cfg.model.size).state_dict())  # a trained, peaked teacher
    teacher_trainer.save(teacher_ckpt)
    snap = _snapshot(tmp_path, root / "data" / "replay" / "snapshots" / "teacher" / "gen_0001",
                     make_raw_rows(120, seed=2))
    teacher_run = Tracker(root, "teacher").run_id
    report = root / "reports" / "distill" / "s"
    req = DistillRequest(root, "s", cfg, Teacher(teacher_ckpt, "teacher", teacher_run), (snap,), report,
                         ladder_rungs=(cfg.evaluate.rungs[0],))
    summary = run_distill(req, progress=False)

    student = summary["publish"]["student"]
    assert student["passed"] and student["metrics"]["passed"]
    p = cfg.publish
    for label in ("student", "teacher"):  # both artifacts at or past the gate's thresholds
        fid = summary["publish"][label]["metrics"]
        assert fid["passed"] and fid["positions"] == p.calibration_positions, (label, fid)
        assert fid["agreement"] >= p.min_agreement and 0 <= fid["kl_mean"] <= p.max_kl, (label, fid)
        assert 0 <= fid["wdl_mae"] <= p.max_wdl_mae, (label, fid)
    held = summary["training"]["agreement"]
    assert held["positions"] == summary["training"]["held_out"] > 0
    assert 0 <= held["top1_agreement"] <= 1 and held["policy_kl"] >= 0 and 0 <= held["wdl_mae"] <= 1
    artifact = load_artifact(student["artifact"])  # validated: metadata, encoding version, signature
    assert artifact.metadata.fidelity["passed"] and artifact.metadata.network_size == cfg.distill.student_size
    assert "snapshots gen_0001" in artifact.metadata.tuning_source  # tuned on snapshot rows, not the gate's set
    training = summary["training"]
    assert training["student_size"] == cfg.distill.student_size and training["steps"] == cfg.distill.steps
    assert training["student_parameters"] < training["teacher_parameters"]
    d = cfg.distill
    assert summary["equal_visits"]["student_visits"] == summary["equal_visits"]["opponent_visits"] == d.visits
    s = summary["speed"]
    assert summary["equal_time"]["student_visits"] == max(1, round(d.visits * s["ratio"]))
    for key in ("equal_visits", "equal_time"):
        m = summary[key]
        assert m["games"] == 2 * d.openings and m["wins"] + m["draws"] + m["losses"] == m["games"]
        check_match(m, req.work / "matches" / f"{key}.json")
    rung = cfg.evaluate.rungs[0]
    for network in ("student", "teacher"):
        ladder = summary["ladder"][network][rung]
        assert ladder["games"] == 2 * cfg.evaluate.openings and ladder["opponent"] == rung
        check_match(ladder, req.work / "matches" / f"ladder_{network}_{rung}.json")
    played = json.loads((req.work / "matches" / f"ladder_student_{rung}.json").read_text())
    assert all(g["result"] in ("1-0", "0-1", "1/2-1/2") and g["moves"] for g in played["games"])
    assert {"distill.md", "distill.png", "summary.json"} <= {p.name for p in report.iterdir()}
    assert "equal wall time per move" in (report / "distill.md").read_text()

    client = MlflowClient(tracking_uri(root))
    run = client.get_run(summary["mlflow_run_id"])
    assert run.data.tags[M.TAG_KIND] == "distill"
    assert run.data.tags[TAG_TEACHER_RUN] == teacher_run and run.data.tags[TAG_PARENT] == teacher_run
    assert {"distill/equal_time_score", "distill/equal_visits_elo", "distill/holdout_policy_kl"} <= set(run.data.metrics)
    for key in ("equal_visits", "equal_time"):  # the tracked numbers are the summary's
        for part in ("score", "elo", "elo_lower", "elo_upper"):
            assert run.data.metrics[f"distill/{key}_{part}"] == pytest.approx(summary[key][part])
    assert run.data.metrics["distill/holdout_policy_kl"] == pytest.approx(held["policy_kl"])
    assert run.data.metrics["distill/student_fidelity_agreement"] == pytest.approx(student["metrics"]["agreement"])
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"report", "student"}

    # A rerun with the same inputs resumes: no retraining, the same matches and budgets.
    stamp = Path(training["checkpoint"]).stat().st_mtime_ns
    again = run_distill(req, progress=False)
    assert Path(training["checkpoint"]).stat().st_mtime_ns == stamp
    for key in ("equal_visits", "equal_time", "speed"):
        assert again[key] == summary[key]
    assert again["mlflow_run_id"] == summary["mlflow_run_id"]
