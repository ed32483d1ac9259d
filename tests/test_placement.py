"""Actors on GPUs (``inference.gpus``, ``inference.actors_per_gpu``): the
placement rule, the recipe's validation, the refusals of devices a machine
does not have, and the device index travelling from the plan to the backend
an actor builds. This machine has no GPU: a GPU count is faked where the
rule is checked, and the real torch backend refuses what it cannot do."""

from __future__ import annotations

from pathlib import Path

import pytest
from placement_support import two_actors_on_one_device
from publish_support import one_thread  # noqa: F401

from chesszero.campaign.context import Campaign
from chesszero.campaign.dispatch import Limits, drive
from chesszero.campaign.runner import overlap_jobs
from chesszero.campaign.selfplay_stage import ActorJob, plan_selfplay, run_actor_job
from chesszero.config import REPO_ROOT, ConfigError, load_config
from chesszero.config.schema import InferenceConfig
from chesszero.publish import backends, placement
from chesszero.publish.backends import BackendError, make_runtime, visible_gpus
from chesszero.publish.pipeline import PublishResult
from chesszero.publish.placement import ActorLayout, actor_device, actor_layout, resolve_layout

PARAMS = REPO_ROOT / "params.yaml"
NO_GPU = visible_gpus() == 0


def _inference(backend: str, gpus: int = 0, per_gpu: int = 4) -> InferenceConfig:
    return InferenceConfig(backend=backend, gpus=gpus, actors_per_gpu=per_gpu)


def test_actors_go_round_robin_over_the_gpus() -> None:
    assert [actor_device(i, 2) for i in range(8)] == [0, 1, 0, 1, 0, 1, 0, 1]
    assert [actor_device(i, 3) for i in range(6)] == [0, 1, 2, 0, 1, 2]
    assert {actor_device(i, 1) for i in range(4)} == {0}
    with pytest.raises(ValueError, match="at least one GPU, got gpus=0"):
        actor_device(0, 0)
    with pytest.raises(ValueError, match="actor index must be >= 0, got -1"):
        actor_device(-1, 2)


def test_the_layout_on_gpus_is_gpus_times_actors_per_gpu() -> None:
    layout = resolve_layout(_inference("tensorrt", gpus=0, per_gpu=4), cpu_actors=32, visible=2)
    assert layout == ActorLayout(actors=8, gpus=2, actors_per_gpu=4)
    devices = [layout.device(i) for i in range(layout.actors)]
    assert [devices.count(d) for d in (0, 1)] == [4, 4]
    # The overlap actors (a prefix) are spread evenly: 4 of 8 -> two per GPU.
    assert sorted(devices[:4]) == [0, 0, 1, 1]
    assert layout.describe() == "8 actors: 2 GPUs x 4 per GPU (actor i on cuda:i mod 2)"
    # gpus 1 of 2 visible: only cuda:0, three actors on it.
    one = resolve_layout(_inference("ort-gpu", gpus=1, per_gpu=3), cpu_actors=32, visible=2)
    assert one == ActorLayout(actors=3, gpus=1, actors_per_gpu=3)
    assert {one.device(i) for i in range(3)} == {0}
    with pytest.raises(ValueError, match="actor 3 is not one of the 3 actors"):
        one.device(3)


def test_the_layout_on_the_cpu_keeps_selfplay_actors() -> None:
    for backend, visible in (("ort-cpu", 0), ("ort-cpu", 4), ("torch", 0)):
        layout = resolve_layout(_inference(backend), cpu_actors=5, visible=visible)
        assert layout == ActorLayout(actors=5, gpus=0, actors_per_gpu=0)
        assert {layout.device(i) for i in range(5)} == {0}
        assert layout.describe() == "5 actors on the CPU"
    assert resolve_layout(_inference("torch"), cpu_actors=5, visible=1).gpus == 1  # torch with CUDA: GPUs


def test_more_gpus_than_visible_is_a_clear_error() -> None:
    with pytest.raises(BackendError, match=r"inference\.gpus is 3 but only 2 GPU\(s\) are visible to the 'torch'"):
        resolve_layout(_inference("torch", gpus=3), cpu_actors=2, visible=2)
    with pytest.raises(BackendError, match="inference.gpus is 2 but no GPU is visible: the 'torch' backend"):
        resolve_layout(_inference("torch", gpus=2), cpu_actors=2, visible=0)
    with pytest.raises(BackendError, match="'tensorrt' runs on GPUs but no GPU is visible"):
        resolve_layout(_inference("tensorrt"), cpu_actors=2, visible=0)
    assert issubclass(BackendError, ValueError)  # exit status 2 on the command line


@pytest.mark.parametrize(("key", "value", "message"), [
    ("inference.gpus", -1, r"inference\.gpus: Input should be greater than or equal to 0"),
    ("inference.actors_per_gpu", 0, r"inference\.actors_per_gpu: Input should be greater than or equal to 1"),
    ("inference.actors_per_gpu", 65, r"inference\.actors_per_gpu: Input should be less than or equal to 64"),
    ("inference.gpus", "all", r"inference\.gpus: Input should be a valid integer"),
])
def test_the_recipe_validates_the_gpu_settings(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(PARAMS, preset="smoke", overrides={key: value})


def test_the_paper_preset_runs_four_actors_per_gpu() -> None:
    cfg = load_config(PARAMS, preset="paper")
    assert (cfg.inference.gpus, cfg.inference.actors_per_gpu) == (0, 4)
    assert (cfg.selfplay.games_in_flight, cfg.selfplay.batch_size) == (512, 320)
    eight = resolve_layout(cfg.inference.model_copy(update={"backend": backends.Backend.TENSORRT}),
                           cfg.selfplay.actors, visible=8)
    assert eight.actors == cfg.selfplay.actors == 32  # the paper's 8 GPUs x 4
    assert resolve_layout(cfg.inference, cfg.selfplay.actors, visible=1).actors == 32  # ort-cpu: the CPU count


def test_a_device_the_machine_lacks_is_refused_naming_both_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    if NO_GPU:
        with pytest.raises(BackendError, match="'torch': CUDA device 1 requested but no GPU is visible"):
            make_runtime("torch", device=1)
        assert make_runtime("torch", device=0).name == "torch-cpu-fp32"
    monkeypatch.setattr(backends, "visible_gpus", lambda: 2)
    with pytest.raises(BackendError, match=r"CUDA device 2 requested but 2 GPU\(s\) are visible \(devices 0\.\.1\)"):
        make_runtime("torch", device=2)
    with pytest.raises(BackendError, match="CUDA device -1 is not an ordinal"):
        make_runtime("torch", device=-1)
    assert make_runtime("ort-cpu", device=5).name == "onnxruntime-cpu"  # the CPU backend ignores it


def _campaign(root: Path, backend: str, **overrides: object) -> Campaign:
    """A smoke campaign whose params.yaml (read again by each actor job) names ``backend``."""
    text = PARAMS.read_text()
    assert "    backend: ort-cpu\n" in text
    (root / "params.yaml").write_text(text.replace("    backend: ort-cpu\n", f"    backend: {backend}\n", 1))
    return Campaign.open(root, "c", preset="smoke", overrides=overrides or None)


class _Built(Exception):
    """Raised by the recording runtime once the device has reached it."""


def test_each_actor_builds_its_backend_on_its_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    campaign = _campaign(tmp_path, "torch", **{"inference.actors_per_gpu": 3})
    monkeypatch.setattr(placement, "visible_gpus", lambda: 2)  # a two-GPU machine, as far as the plan knows
    assert actor_layout(campaign.cfg).describe() == "6 actors: 2 GPUs x 3 per GPU (actor i on cuda:i mod 2)"
    jobs = plan_selfplay(campaign, 0, positions_needed=60, artifact=str(tmp_path / "a.onnx"), model_id="m",
                         resign_threshold=None)
    assert [(j.actor, j.device, j.positions) for j in jobs] == [(i, i % 2, 10) for i in range(6)]
    assert isinstance(jobs[0], ActorJob)
    overlap = overlap_jobs(campaign)  # overlap_fraction 0.5 of 6 actors: the first 3, on both GPUs
    assert [(j.actor, j.device, j.label) for j in overlap] == [(0, 0, "overlap"), (1, 1, "overlap"), (2, 0, "overlap")]

    built: list[str] = []

    class Recording:
        def __init__(self, *, device: str) -> None:
            built.append(device)
            raise _Built

    monkeypatch.setattr(backends, "visible_gpus", lambda: 2)
    monkeypatch.setattr(backends, "TorchRuntime", Recording)
    for job in jobs[:2]:
        with pytest.raises(_Built):
            run_actor_job(job)
    assert built == ["cuda:0", "cuda:1"]


@pytest.mark.skipif(not NO_GPU, reason="checks the refusal on a machine without a GPU")
def test_an_actor_given_a_gpu_this_machine_lacks_stops_before_playing(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "torch")
    job = ActorJob(str(tmp_path), "c", "smoke", actor=1, generation=0, positions=8,
                   artifact=str(tmp_path / "missing.onnx"), model_id="m", resign_threshold=None, device=1)
    with pytest.raises(BackendError, match="'torch': CUDA device 1 requested but no GPU is visible"):
        run_actor_job(job)
    assert not (campaign.paths.actor(1) / "archive.sqlite").exists()


@pytest.mark.skipif(not NO_GPU, reason="checks the refusal on a machine without a GPU")
def test_a_campaign_asking_for_more_gpus_than_visible_stops_before_any_work(tmp_path: Path) -> None:
    ran: list[object] = []
    campaign = _campaign(tmp_path, "torch", **{"inference.gpus": 1})
    with pytest.raises(BackendError, match="inference.gpus is 1 but no GPU is visible"):
        drive(campaign, Limits(generations=1), lambda stage, args: ran.append(stage) or {},
              lambda jobs, advance: ran.append(jobs))
    assert ran == [] and not campaign.paths.dir.exists()


def test_two_actors_sharing_a_device_play_what_each_plays_alone(published_on_cpu: PublishResult) -> None:
    """The torch backend on the CPU here; ``test_gpu`` runs the same on cuda:0."""
    layout = resolve_layout(_inference("torch", per_gpu=2), cpu_actors=2, visible=visible_gpus())
    run = two_actors_on_one_device(published_on_cpu.int8.path, "torch", layout)
    assert run.most_in_flight == 2  # both actors' batches were being evaluated at once
    assert all(len(games) >= 4 for games in run.alone)
    assert run.alone[0] != run.alone[1]  # two seeds, two sets of games
    assert run.together == run.alone
