"""Progressive sizing in the campaign: candidate creation, catch-up training,
promotion by matches only (never by loss), and a kill -9 between the two
passing matches."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from campaign_support import REPO, campaign_env, make_root

from chesszero.campaign import progressive
from chesszero.campaign.state import CampaignState, Candidate
from chesszero.config import ConfigError, load_config
from chesszero.replay import CreditLedger

PARAMS = REPO / "params.yaml"

# A 2x16 campaign with a grown 2x24 candidate from generation 0; the candidate
# trains 3 quanta per active quantum and plays every generation. Only the final
# generation is evaluated (random rung, raw policy only). The fidelity gate is
# loosened: on 16 positions one disagreement would fail a candidate.
OVERRIDES = {
    "progressive.stages": ["2x24"], "progressive.start": "grown", "progressive.after_generations": 0,
    "progressive.plateau_evaluations": None, "progressive.candidate_quanta": 3.0,
    "progressive.match_every": 1, "evaluate.cadence_generations": 100, "evaluate.rungs": ["random"],
    "campaign.eval_visit_budgets": [0], "campaign.snapshot_every": 100, "campaign.overlap_fraction": 0.0,
    "campaign.wall_clock_hours": 5.0, "publish.min_agreement": 0.75, "publish.max_kl": 0.05,
}


def test_plateau_and_generation_triggers() -> None:
    cfg = load_config(PARAMS, preset="smoke", overrides={**OVERRIDES, "progressive.plateau_evaluations": 2,
                                                         "progressive.after_generations": 10})
    state = CampaignState(name="t", preset="smoke", generation=3)
    assert progressive.start_reason(cfg, state) is None
    state.searched_elo = [[0, 100.0], [1, 150.0], [2, 140.0]]
    assert progressive.start_reason(cfg, state) is None  # 150 is one of the last two
    state.searched_elo.append([3, 149.0])
    assert progressive.start_reason(cfg, state) == "plateau"  # 140, 149 do not beat 150
    state.stage_started = 2  # ratings before the stage began do not count
    assert progressive.start_reason(cfg, state) is None
    state.generation = 12
    assert progressive.start_reason(cfg, state) == "generation"
    state.stage = 1  # no size after 2x24
    assert progressive.start_reason(cfg, state) is None
    assert progressive.plateaued([1.0, 1.0], 1) and not progressive.plateaued([1.0, 2.0], 1)


def test_candidate_quanta_follow_the_ratio() -> None:
    cfg = load_config(PARAMS, preset="smoke", overrides={**OVERRIDES, "progressive.candidate_quanta": 1.5})
    cand = Candidate(size="2x24", stage=1, created=4, reason="generation")
    assert [progressive.due_quanta(cfg, cand, g) for g in range(4, 8)] == [1, 3, 4, 6]


@pytest.mark.parametrize(("overrides", "message"), [
    ({"progressive.stages": ["2x8"]}, "must grow"),
    ({"progressive.stages": ["2x24"], "progressive.after_generations": None,
      "progressive.plateau_evaluations": None}, "need a trigger"),
    ({"progressive.stages": ["2y24"]}, "BxC"),
    ({"progressive.start": "borrowed"}, "progressive.start"),
])
def test_bad_progressive_recipes_are_named(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(PARAMS, preset="smoke", overrides=overrides)


def test_paper_preset_hands_off_12x128_to_14x160() -> None:
    cfg = load_config(PARAMS, preset="paper")
    assert progressive.sizes(cfg) == ["12x128", "14x160"]
    assert cfg.progressive.candidate_quanta == 1.5


def test_catch_up_is_counted_apart_from_funded_credit() -> None:
    ledger = CreditLedger(reuse_ratio=4.0)
    ledger.admit(10)
    ledger.spend_catch_up(8, 32)  # unfunded: 256 presentations > 40 funded
    assert ledger.catch_up_presentations == 256 and ledger.spent_presentations == 0
    again = CreditLedger.from_dict(ledger.to_dict())
    assert again == ledger
    legacy = {k: v for k, v in ledger.to_dict().items() if k != "catch_up_presentations"}
    assert CreditLedger.from_dict(legacy).catch_up_presentations == 0


SCRIPT = """
import json, sys, time
from pathlib import Path
from chesszero.campaign import progressive
from chesszero.campaign.context import Campaign
from chesszero.campaign.dispatch import Limits, run_local

root, scores, sleep_on = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
real = progressive._play
calls = []

class Scripted:
    def __init__(self, result, score):
        self.result, self.score = result, score

    def elo(self, anchor, resamples=10000):
        return self.result.elo(anchor, resamples=resamples)

def scripted(campaign, candidate, active, generation, index):
    (root / f"match_gen{generation}").write_text(str(index))
    if generation == sleep_on:
        time.sleep(600)  # killed here
    result = real(campaign, candidate, active, generation, index)  # a real match, scripted score
    return Scripted(result, scores[str(generation)])

progressive._play = scripted
campaign = Campaign.open(root, "prog", preset="smoke")
run_local(campaign, Limits(generations=int(sys.argv[4])))
"""


def _progressive_root(tmp: Path) -> Path:
    """A project whose smoke preset carries OVERRIDES (every process of the
    campaign, actors included, reads the recipe from params.yaml)."""
    import yaml

    root = make_root(tmp)
    data = yaml.safe_load((root / "params.yaml").read_text())
    smoke = data["presets"]["smoke"]
    for key, value in OVERRIDES.items():
        section, name = key.split(".")
        smoke.setdefault(section, {})[name] = value
    (root / "params.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (root / "drive.py").write_text(SCRIPT)
    return root


def _run(root: Path, scores: dict[int, float], generations: int, sleep_on: int = -1) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(root / "drive.py"), str(root), json.dumps({str(k): v for k, v in scores.items()}),
         str(sleep_on), str(generations)],
        env=campaign_env(root), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)


def _metric_history(root: Path, key: str) -> dict[int, float]:
    from mlflow.tracking import MlflowClient

    from chesszero.campaign.tracking import tracking_uri

    client = MlflowClient(tracking_uri(root))
    run_id = json.loads((root / "runs" / "prog" / "state.json").read_text())["mlflow_run_id"]
    return {m.step: m.value for m in client.get_metric_history(run_id, key)}


def test_promotion_by_matches_survives_a_kill_between_the_two_passes(tmp_path: Path) -> None:
    """Generation 0 creates the candidate (grown 2x24) and it loses its match
    although its training loss is below the active network's: no promotion.
    Generation 1 passes; the campaign is killed (-9) inside generation 2's
    match; the resumed campaign keeps the first pass, passes again and
    promotes: the training checkpoint becomes 2x24, the candidate's artifact
    is active and the registered `active` alias moves to it."""
    from mlflow.tracking import MlflowClient

    from chesszero.campaign.tracking import tracking_uri
    from chesszero.evaluate.gate import PromotionGate
    from chesszero.publish import load_artifact
    from chesszero.train import load_checkpoint

    root = _progressive_root(tmp_path)
    scores = {0: 0.25, 1: 0.75, 2: 0.5, 3: 0.0}
    proc = _run(root, scores, generations=4, sleep_on=2)
    deadline = time.monotonic() + 900
    while not (root / "match_gen2").exists():
        if proc.poll() is not None:
            raise AssertionError(f"the campaign exited with {proc.returncode}: {proc.stderr.read().decode()[-3000:]}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("generation 2's match never started")
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    run = root / "runs" / "prog"
    gate = PromotionGate.load(run / "candidate_gate.json")
    assert [(e.match_id, e.passed) for e in gate.history] == [("gen0000", False), ("gen0001", True)]
    assert gate.passes == 1 and not gate.promoted

    again = _run(root, scores, generations=4)
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err.decode()[-3000:]

    state = json.loads((run / "state.json").read_text())
    assert state["finished"] and state["stage"] == 1 and state["candidate"] is None
    assert state["promotion"]["last"] == {"generation": 2, "size": "2x24", "created": 0}
    gate = PromotionGate.load(run / "candidate_gate.json")
    assert [(e.match_id, e.passed) for e in gate.history] == [
        ("gen0000", False), ("gen0001", True), ("gen0002", True)]
    assert gate.promoted
    assert load_checkpoint(run / "train.pt").model_size == "2x24"
    assert load_checkpoint(run / "checkpoints" / "stage0_2x16.pt").model_size == "2x16"
    assert not (run / "candidate.pt").exists()
    # The handoff activated the candidate's artifact; generation 3 published the 2x24 network on.
    assert json.loads((run / "artifacts" / "active.json").read_text())["previous"].startswith(
        str((run / "artifacts" / "candidate_gen_0002").resolve()))
    assert load_artifact(state["active_artifact"]).metadata.network_size == "2x24"
    assert not (root / "match_gen3").exists()  # no candidate after the handoff
    ledger = CreditLedger.from_dict(load_checkpoint(run / "train.pt").extra["ledger"])
    assert ledger.catch_up_presentations == 3 * 3 * 8 * 32  # 3 generations x 3 quanta x 8 steps x batch 32
    assert ledger.spent_presentations <= ledger.funded_presentations

    # The failed match came with a lower candidate training loss: loss did not decide.
    cand_loss, main_loss = _metric_history(root, "candidate/train_loss"), _metric_history(root, "train/loss")
    assert cand_loss[0] < main_loss[0]
    assert _metric_history(root, "promotion/promoted") == {0: 0.0, 1: 0.0, 2: 1.0}
    assert _metric_history(root, "promotion/passes") == {0: 0.0, 1: 1.0, 2: 2.0}
    assert _metric_history(root, "progressive/stage") == {0: 0.0, 1: 0.0, 2: 1.0, 3: 1.0}
    assert set(_metric_history(root, "train/loss")) == {0, 1, 2, 3}  # generation 3 trained the 2x24 network
    client = MlflowClient(tracking_uri(root))
    labels = {int(v.version): v.tags["artifact"] for v in client.search_model_versions("name='chesszero-prog'")}
    assert [label for _, label in sorted(labels.items())] == ["initial", "gen0000", "gen0001", "gen0002",
                                                              "gen0002-2x24", "gen0003"]  # the alias moved once to 2x24
    assert labels[int(client.get_model_version_by_alias("chesszero-prog", "active").version)] == "gen0003"


# Real promotion matches: a network trained on material (value) beats an
# untrained one in EnginePlayer matches at small visits, so the gate, driven
# through `judge_candidate` with published artifacts, promotes it although its
# training loss is the higher one, and refuses an untrained candidate against
# a trained active network.
REAL = {"model.size": "1x8", "progressive.stages": ["2x16"], "progressive.after_generations": 0,
        "progressive.plateau_evaluations": None, "progressive.match_every": 1, "evaluate.openings": 2,
        "evaluate.visits": 32, "evaluate.ply_cap": 300,
        # The smoke gate's 16 positions leave no room for one top-1 flip (0.9375 < 0.95), and the
        # material network's policy ties equal captures exactly, so INT8 rounding of another
        # generation's calibration ranges failed the candidate's second publication on an AVX-512
        # VNNI EPYC; 64 positions allow three flips, the gate's thresholds unchanged.
        "publish.calibration_positions": 64}


def _material_state(size: str, steps: int = 300, seed: int = 0) -> dict:
    """A network that knows material, fitted on random-play positions (Adam,
    batches of 64): its WDL follows the side to move's material lead (SPEC 2
    planes 40-44, P 1, N/B 3, R 5, Q 9) and its policy prefers capturing the
    most valuable piece (softmax of 1.5 x the captured piece's value over the
    legal moves, plus 4 for a check), so a small search looks at captures and
    checks first (and finds the mates among them)."""
    import torch
    from torch.nn import functional as F

    from chesszero.model import ChessNet, core_action_table
    from chesszero.publish.calibration import calibration_set_from_games, random_positions

    values = torch.tensor([1.0, 3.0, 3.0, 5.0, 9.0])
    games = random_positions(1024, seed=seed + 11, max_plies=160)
    positions = calibration_set_from_games(games, source="random play")
    checks = torch.zeros(positions.legal.shape)
    for k, game in enumerate(games):
        for a in game.legal_actions():
            game.push_action(int(a))
            checks[k, a] = float(game.is_check())
            game.pop()
    planes, legal = torch.from_numpy(positions.planes.copy()), torch.from_numpy(positions.legal.copy())
    v = torch.tanh((planes[:, 40:45, 0, 0] * values).sum(dim=1) / 3.0)
    wdl = torch.stack([(1 + v) / 2 * 0.96, torch.full_like(v, 0.04), (1 - v) / 2 * 0.96], dim=1)
    to_sq = torch.from_numpy(core_action_table().to_sq.copy())
    victim = (planes.reshape(len(planes), 52, 64)[:, 6:11, :] * values[None, :, None]).sum(dim=1)[:, to_sq]
    policy = torch.softmax((1.5 * victim + 4.0 * checks).masked_fill(~legal, -1e9), dim=1)
    torch.manual_seed(seed)
    net = ChessNet(size).train()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        i = torch.randint(0, len(planes), (64,), generator=gen)
        out = net(planes[i])
        logp = F.log_softmax(out.policy.masked_fill(~legal[i], -1e9), dim=1)
        loss = -(policy[i] * logp).sum(dim=1).mean() - (wdl[i] * F.log_softmax(out.wdl, dim=1)).sum(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: val.detach().clone() for k, val in net.state_dict().items()}


class _Tracker:
    """Records what the stage logs (MLflow itself is tested elsewhere)."""

    def __init__(self) -> None:
        self.artifacts: list[tuple[str, str | None]] = []
        self.registered: list[str] = []

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self.artifacts.append((str(path), artifact_path))

    def log_params(self, params: dict) -> None:
        pass

    def register_active(self, onnx_path: Path, label: str) -> str:
        self.registered.append(label)
        return label


def _checkpoint(path: Path, cfg, size: str, state: dict | None, store_total: int = 0) -> Path:
    import torch

    from chesszero.replay import CreditLedger
    from chesszero.train import Trainer

    torch.manual_seed(5)
    trainer = Trainer(cfg.train, size)
    if state is not None:
        trainer.model.load_state_dict(state)
    trainer.save(path, extra={"ledger": CreditLedger(reuse_ratio=cfg.replay.reuse_ratio,
                                                     store_total=store_total).to_dict(), "candidate_quanta": 0})
    return path


def _loss(state: dict | None, size: str, cfg) -> float:
    """The training loss (the recipe's weights) on replay-like rows of random play with random labels."""
    import torch
    from train_support import make_rows

    from chesszero.model import ChessNet
    from chesszero.train import compute_loss, to_train_batch

    torch.manual_seed(5)
    net = ChessNet(size)
    if state is not None:
        net.load_state_dict(state)
    net.eval()
    batch = to_train_batch(make_rows(256, seed=4))
    with torch.no_grad():
        return float(compute_loss(net(batch.planes), batch, cfg.train.loss_weights).total)


def _judge_real(tmp: Path, *, trained_candidate: bool, generations: int):
    """Runs `judge_candidate` for `generations` generations: the candidate
    (2x16) and the active artifact are each trained on material or untrained."""
    import torch

    from chesszero.campaign.context import Campaign
    from chesszero.campaign.publish_stage import publish_once
    from chesszero.evaluate.gate import PromotionGate

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        root = make_root(tmp)
        campaign = Campaign.open(root, "real", preset="smoke", overrides=REAL)
        paths, cfg = campaign.paths, campaign.cfg
        paths.dir.mkdir(parents=True, exist_ok=True)
        trained = _material_state("2x16")
        tracker = _Tracker()
        _checkpoint(paths.checkpoint, cfg, "1x8", None)
        active_ckpt = _checkpoint(paths.dir / "active_src.pt", cfg, "2x16", None if trained_candidate else trained)
        active = publish_once(campaign, 0, tracker, active_ckpt, paths.artifact_dir(0))
        assert active["passed"], active
        _checkpoint(paths.candidate, cfg, "2x16", trained if trained_candidate else None)
        state = CampaignState(name="real", preset="smoke", active_artifact=active["artifact"],
                              candidate=Candidate(size="2x16", stage=1, created=0, reason="generation"))
        campaign.save_state(state)
        metrics = []
        for g in range(generations):
            state.generation = g
            metrics.append(progressive.judge_candidate(campaign, state, tracker))
        gate = PromotionGate.load(paths.candidate_gate)
        losses = {"candidate": _loss(trained if trained_candidate else None, "2x16", cfg),
                  "active": _loss(None if trained_candidate else trained, "2x16", cfg)}
        return campaign, state, gate, metrics, losses, tracker
    finally:
        torch.set_num_threads(before)


def _check_match_records(campaign, generation: int, score: float) -> tuple[int, int, int]:
    """The PGN the match saved agrees with the logged score: (W + D/2) / games, from the candidate's side."""
    import chess.pgn

    path = campaign.paths.evals(generation) / "candidate_match.pgn"
    wins = draws = losses = 0
    with path.open() as f:
        while (game := chess.pgn.read_game(f)) is not None:
            result = game.headers["Result"]
            white = game.headers["White"] == "candidate"
            assert result in ("1-0", "0-1", "1/2-1/2") and {game.headers["White"], game.headers["Black"]} == {
                "candidate", "active"}
            if result == "1/2-1/2":
                draws += 1
            elif (result == "1-0") == white:
                wins += 1
            else:
                losses += 1
    games = wins + draws + losses
    assert games == 2 * campaign.cfg.evaluate.openings
    assert score == pytest.approx((wins + draws / 2) / games)
    return wins, draws, losses


def test_a_trained_candidate_wins_real_matches_and_is_promoted_despite_a_higher_loss(tmp_path: Path) -> None:
    from chesszero.train import load_checkpoint

    campaign, state, gate, metrics, losses, tracker = _judge_real(tmp_path, trained_candidate=True, generations=2)
    assert losses["candidate"] > losses["active"]  # a loss rule would have kept the untrained network
    assert [(e.match_id, e.passed) for e in gate.history] == [("gen0000", True), ("gen0001", True)]
    wins = losses_ = 0
    for g, (event, m) in enumerate(zip(gate.history, metrics, strict=True)):
        assert m["promotion/score"] == event.score >= campaign.cfg.evaluate.promotion_score
        w, _, lost = _check_match_records(campaign, g, event.score)
        wins, losses_ = wins + w, losses_ + lost
        elo, lo, hi = m["promotion/elo_diff"], m["promotion/elo_diff_lo"], m["promotion/elo_diff_hi"]
        assert lo <= elo <= hi or (math.isinf(elo) and math.isinf(lo if elo < 0 else hi))
    assert wins > losses_ and wins >= 1  # it beat the untrained network, not only drew it
    assert gate.promoted and metrics[-1]["promotion/promoted"] == 1.0
    assert state.candidate is None and state.stage == 1 and state.promotion["last"]["generation"] == 1
    assert load_checkpoint(campaign.paths.checkpoint).model_size == "2x16"
    assert state.active_artifact.startswith(str(campaign.paths.candidate_artifact_dir(1).resolve()))
    assert tracker.registered == ["gen0001-2x16"]


def test_an_untrained_candidate_loses_real_matches_to_a_trained_active_and_stays_out(tmp_path: Path) -> None:
    # Two generations: promotion needs two consecutive passing matches, so one
    # failed match keeps it out (a margin against INT8 rounding that differs by CPU).
    campaign, state, gate, metrics, losses, tracker = _judge_real(tmp_path, trained_candidate=False, generations=2)
    assert losses["candidate"] < losses["active"]  # a loss rule would have promoted the untrained network
    assert len(gate.history) == 2 and not all(e.passed for e in gate.history)
    wins = lost = 0
    for g, (event, m) in enumerate(zip(gate.history, metrics, strict=True)):
        assert event.passed == (event.score >= campaign.cfg.evaluate.promotion_score)
        w, _, lo = _check_match_records(campaign, g, event.score)
        wins, lost = wins + w, lost + lo
        assert m["promotion/score"] == event.score and m["promotion/promoted"] == 0.0
    assert lost > wins  # the trained active network beat it
    assert not gate.promoted
    assert state.candidate is not None and state.stage == 0 and tracker.registered == []
    assert campaign.paths.candidate.exists()
