"""torch's intra-op threads while the trainer shares the process with the
overlapping actors: the trainer takes the cores the actors leave, the count
is restored afterwards (also when training raises), and the campaign's train
phase applies it only while actors overlap."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from chesszero.campaign import runner
from chesszero.campaign.context import Campaign
from chesszero.campaign.learn_stage import UnfundedQuantum
from chesszero.campaign.state import CampaignState, Phase
from chesszero.config import REPO_ROOT
from chesszero.train import threads as T


@pytest.fixture
def four_threads(monkeypatch: pytest.MonkeyPatch):
    """A 4-CPU process whose torch pool starts at 4 threads (restored after)."""
    monkeypatch.setattr(T, "usable_cpus", lambda: 4)
    with T.torch_threads(4):
        yield


def test_the_trainer_gets_the_cores_left_and_at_least_one() -> None:
    assert [T.trainer_threads(busy, cpus=4) for busy in range(6)] == [4, 3, 2, 1, 1, 1]
    assert T.trainer_threads(0, cpus=1) == 1
    assert T.trainer_threads(0) == T.usable_cpus() >= 1
    with pytest.raises(ValueError, match="busy_threads must be >= 0, got -1"):
        T.trainer_threads(-1, cpus=4)
    with pytest.raises(ValueError, match="cpus must be >= 1, got 0"):
        T.trainer_threads(1, cpus=0)


def test_torch_threads_restores_the_count_also_after_an_error(four_threads: None) -> None:
    with T.torch_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 4
    with pytest.raises(RuntimeError, match="boom"), T.torch_threads(2):
        assert torch.get_num_threads() == 2
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 4
    with pytest.raises(ValueError, match="threads must be >= 1, got 0"), T.torch_threads(0):
        pass
    assert torch.get_num_threads() == 4


def test_training_beside_busy_threads_never_exceeds_the_previous_count(four_threads: None) -> None:
    assert [T.threads_beside(busy) for busy in range(5)] == [4, 3, 2, 1, 1]
    with T.training_beside(0) as n:
        assert n == torch.get_num_threads() == 4
    with T.training_beside(1) as n:
        assert n == torch.get_num_threads() == 3
    with T.training_beside(3) as n:
        assert n == torch.get_num_threads() == 1
    with T.torch_threads(2), T.training_beside(1) as n:  # 3 cores left, but the pool had 2
        assert n == torch.get_num_threads() == 2
    assert torch.get_num_threads() == 4


class _Overlap:
    """Stands in for runner.OverlapPlayer: `actors` threads that play until stopped."""

    def __init__(self, actors: int) -> None:
        self.actors = actors
        self.played = threading.Event()

    def __call__(self, stop: threading.Event) -> list:
        self.played.set()
        stop.wait(30)
        return []


@pytest.mark.parametrize(("actors", "expected"), [(None, 4), (1, 3), (2, 2)])
def test_the_train_phase_trains_on_the_cores_the_overlap_actors_leave(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, four_threads: None, actors: int | None,
        expected: int) -> None:
    (tmp_path / "params.yaml").write_text((REPO_ROOT / "params.yaml").read_text())
    campaign = Campaign.open(tmp_path, "c", preset="smoke")
    campaign.save_state(CampaignState(name="c", preset="smoke", phase=Phase.TRAIN))
    seen: list[int] = []

    def train(_campaign: Campaign, generation: int) -> None:
        seen.append(torch.get_num_threads())
        raise UnfundedQuantum(f"generation {generation}: recorded the threads")  # back to self-play

    monkeypatch.setattr(runner, "train", train)
    overlap = None if actors is None else _Overlap(actors)
    assert runner.train_quantum(campaign, overlap) == {}
    assert seen == [expected]
    assert torch.get_num_threads() == 4
    assert campaign.load_state().phase is Phase.SELFPLAY
    if overlap is not None:
        assert overlap.played.is_set()
