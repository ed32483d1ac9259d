"""Tests of the typed recipe: presets load, bad keys/values are named, schedules look up."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from chesszero.config import (
    Backend,
    Config,
    ConfigError,
    LinearSchedule,
    Reflection,
    StepSchedule,
    deep_merge,
    load_config,
    parse_overrides,
    preset_names,
)
from chesszero.train.distributed import resolve_world_size

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def test_presets_are_smoke_cpu_paper() -> None:
    assert preset_names(PARAMS) == ["smoke", "cpu", "paper"]


@pytest.mark.parametrize("preset", ["smoke", "cpu", "paper"])
def test_each_preset_loads(preset: str) -> None:
    cfg = load_config(PARAMS, preset=preset)
    assert isinstance(cfg, Config)
    assert cfg.preset == preset
    assert cfg.train.global_batch % max(1, cfg.train.world_size) == 0


def test_paper_preset_has_paper_values() -> None:
    cfg = load_config(PARAMS, preset="paper")
    assert cfg.model.size == "12x128" and cfg.progressive.stages == ["14x160"]  # the paper's handoff
    s = cfg.search
    assert (s.c_puct_selfplay, s.c_puct_eval, s.fpu_reduction) == (1.5, 1.0, 0.2)
    assert (s.dirichlet_epsilon, s.dirichlet_alpha, s.forced_playout_k) == (0.25, 0.3, 1.5)
    assert (s.discount, s.subtree_retention) == (0.99, 0.6)
    assert s.visit_cap.values == [300, 400, 500, 600, 800]
    assert cfg.selfplay.ply_cap.values == [150, 160, 180, 200, 250]
    assert cfg.selfplay.temperature.at(0) == 1.3 and cfg.selfplay.temperature.at(60) == 0.1
    assert cfg.selfplay.restart_fraction == 0.5 and cfg.selfplay.continuation_fraction == 0.2
    assert cfg.replay.logical_capacity.values[0] == 600_000
    assert cfg.replay.logical_capacity.values[-1] == 20_000_000
    assert (cfg.replay.reuse_ratio, cfg.replay.surprise_fraction, cfg.replay.surprise_cap) == (4, 0.7, 2)
    t = cfg.train
    assert (t.steps_per_quantum, t.global_batch, t.world_size) == (500, 2048, 0)  # 0: one rank per GPU
    assert resolve_world_size(t, gpus=8).local_batch == 256  # the paper's 8 ranks
    assert (t.momentum, t.nesterov, t.weight_decay, t.grad_clip) == (0.9, True, 1e-4, 1.0)
    assert t.lr.at(0) == 0.0 and t.lr.at(1000) == pytest.approx(0.1)
    assert t.lr.at(10**7) == pytest.approx(0.01)
    assert t.reflection is Reflection.NO_CASTLING and t.bf16
    w = t.loss_weights
    assert (w.policy, w.value, w.next_policy, w.length) == (1.0, 1.0, 0.15, 0.1)
    p = cfg.publish
    assert (p.calibration_positions, p.min_agreement, p.max_kl, p.max_wdl_mae) == (516, 0.95, 0.01, 0.02)


def supply(cfg: Config) -> float:
    """Positions one generation must admit to fund its quantum (steps x batch / reuse)."""
    return cfg.train.steps_per_quantum * cfg.train.global_batch / cfg.replay.reuse_ratio


def test_smoke_preset_is_tiny() -> None:
    cfg = load_config(PARAMS, preset="smoke")
    assert cfg.model.shape.blocks <= 2 and cfg.model.shape.channels <= 16
    assert cfg.search.visit_cap.at(10**6) <= 16
    assert cfg.train.steps_per_quantum * cfg.train.global_batch <= 512
    assert supply(cfg) == 64
    assert cfg.evaluate.openings * 2 == 2  # 2-game ladder matches
    assert cfg.campaign.eval_visit_budgets == [0, 8]
    assert cfg.selfplay.ply_cap.at(10**6) <= 60 and cfg.evaluate.ply_cap <= 60
    assert cfg.publish.calibration_positions <= 32 and cfg.publish.qat_steps <= 2
    assert cfg.campaign.materialize_workers == 0  # no worker processes to start
    assert cfg.campaign.checkpoint_every == cfg.campaign.snapshot_every == 1  # every path runs


def test_cpu_preset_learns_within_an_hour_on_two_cores() -> None:
    cfg = load_config(PARAMS, preset="cpu")
    assert [cfg.model.size, *cfg.progressive.stages] == ["4x48", "6x64"]  # grown 6x64 takes over
    assert cfg.search.visit_cap.at(0) >= 32 and cfg.search.visit_cap.at(10**6) <= 64
    assert cfg.replay.reuse_ratio == 4
    assert supply(cfg) == 2048  # = 64 steps x 128 rows / reuse 4
    assert cfg.replay.logical_capacity.at(0) >= 3 * supply(cfg)
    assert cfg.train.world_size == 1 and not cfg.train.bf16
    assert cfg.train.lr.keys[1] <= 200  # warmup done in the first few generations
    assert cfg.selfplay.batch_size * 2 == cfg.selfplay.games_in_flight  # double buffering fills
    assert {"random", "greedy"} <= set(cfg.evaluate.rungs)
    assert cfg.campaign.wall_clock_hours <= 1.0
    budgets = cfg.campaign.eval_visit_budgets  # raw policy, and the ladder's own budget
    assert budgets[0] == 0 and cfg.evaluate.visits in budgets and budgets == sorted(budgets)
    assert cfg.campaign.materialize_workers == 0  # 2 cores: no worker processes


def test_paper_supply_matches_the_paper() -> None:
    cfg = load_config(PARAMS, preset="paper")
    assert supply(cfg) == 500 * 2048 / 4
    c = cfg.campaign
    assert c.overlap_fraction == 0.5 and c.dask_address is None and c.materialize_workers == 2
    assert c.eval_visit_budgets[0] == 0


@pytest.mark.parametrize("preset", ["smoke", "cpu", "paper"])
def test_rungs_are_ladder_rungs(preset: str) -> None:
    from chesszero.evaluate.ladder import DEFAULT_RUNGS

    names = [r.name for r in DEFAULT_RUNGS]
    rungs = load_config(PARAMS, preset=preset).evaluate.rungs
    assert set(rungs) <= set(names)
    assert rungs == sorted(rungs, key=names.index)  # weakest first, as the ladder orders them


def test_unknown_key_is_named() -> None:
    with pytest.raises(ConfigError, match=r"train\.lr_peek: Extra inputs are not permitted"):
        load_config(PARAMS, preset="smoke", overrides={"train": {"lr_peek": 0.2}})
    with pytest.raises(ConfigError, match=r"selfplay\.resign\.bogus"):
        load_config(PARAMS, preset="cpu", overrides={"selfplay.resign.bogus": 1})


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"search.dirichlet_epsilon": 1.5}, r"search\.dirichlet_epsilon: .*less than or equal to 1"),
        ({"train.momentum": 1.0}, r"train\.momentum: "),
        ({"train.grad_clip": 0}, r"train\.grad_clip: .*greater than 0"),
        ({"train.lr": [[0, -0.1]]}, r"train\.lr\.0\.1: "),
        ({"train.reflection": "sometimes"}, r"train\.reflection: "),
        ({"search.visit_cap": [[5, 100]]}, r"search\.visit_cap: .*start at key 0"),
        ({"search.visit_cap": [[0, 100], [0, 200]]}, r"search\.visit_cap: .*strictly increasing"),
        ({"model.size": "4x30"}, r"model\.size: .*multiple of 4"),
        ({"train.world_size": 3}, r"train: .*not divisible by world_size 3"),
        ({"replay.capacity": 10}, r"replay: .*must not exceed capacity"),
        ({"evaluate.rungs": ["random", "sf1"]}, r"evaluate\.rungs: .*unknown ladder rungs \['sf1'\]"),
        ({"evaluate.rungs": ["random", "random"]}, r"evaluate\.rungs: .*unique"),
        ({"evaluate.rungs": []}, r"evaluate\.rungs: .*at least 1"),
        ({"campaign.eval_visit_budgets": [0, 32, 8]}, r"campaign\.eval_visit_budgets: .*increasing"),
        ({"campaign.eval_visit_budgets": [-1]}, r"campaign\.eval_visit_budgets\.0: "),
        ({"campaign.overlap_fraction": 1.5}, r"campaign\.overlap_fraction: "),
        ({"campaign.checkpoint_every": 0}, r"campaign\.checkpoint_every: "),
        ({"campaign.snapshot_every": 0}, r"campaign\.snapshot_every: "),
        ({"campaign.materialize_workers": -1}, r"campaign\.materialize_workers: "),
        ({"campaign.dask_address": " "}, r"campaign\.dask_address: .*non-empty"),
    ],
)
def test_out_of_range_value_is_named(override: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        load_config(PARAMS, preset="smoke", overrides=override)


def test_unknown_preset_and_missing_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown preset 'huge'"):
        load_config(PARAMS, preset="huge")
    data = yaml.safe_load(PARAMS.read_text())
    del data["defaults"]["train"]["seed"]
    broken = tmp_path / "params.yaml"
    broken.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"train\.seed: Field required"):
        load_config(broken, preset="paper")


def test_overrides_deep_merge_nested_and_dotted() -> None:
    cfg = load_config(
        PARAMS,
        preset="cpu",
        overrides={"train.seed": 7, "selfplay": {"resign": {"enabled": False}}},
    )
    assert cfg.train.seed == 7 and not cfg.selfplay.resign.enabled
    assert cfg.selfplay.resign.min_triggers == 20  # preset value kept
    assert cfg.model.size == "4x48"
    merged = deep_merge({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"c": 5}})
    assert merged == {"a": {"b": 1, "c": 5}, "d": 3}


def test_command_line_overrides_parse_as_yaml() -> None:
    parsed = parse_overrides(["train.seed=7", "campaign.eval_visit_budgets=[0, 16]",
                              "campaign.dask_address=tcp://10.0.0.5:8786"])
    assert parsed == {"train.seed": 7, "campaign.eval_visit_budgets": [0, 16],
                      "campaign.dask_address": "tcp://10.0.0.5:8786"}
    cfg = load_config(PARAMS, preset="smoke", overrides=parsed)
    assert cfg.train.seed == 7 and cfg.campaign.eval_visit_budgets == [0, 16]
    assert cfg.campaign.dask_address == "tcp://10.0.0.5:8786"
    assert parse_overrides(["campaign.dask_address=null"]) == {"campaign.dask_address": None}
    with pytest.raises(ConfigError, match=r"KEY=VALUE .*got 'train.seed'"):
        parse_overrides(["train.seed"])
    with pytest.raises(ConfigError, match=r"override 'train.lr=\[\[0': value is not valid YAML"):
        parse_overrides(["train.lr=[[0"])


def test_config_is_frozen_and_round_trips() -> None:
    cfg = load_config(PARAMS, preset="smoke")
    with pytest.raises(ValueError, match="frozen"):
        cfg.train.seed = 3  # type: ignore[misc]
    again = Config.model_validate(cfg.model_dump(mode="json"))
    assert again == cfg


class _Holder(BaseModel):
    step: StepSchedule[int]
    linear: LinearSchedule[float]


def test_schedule_lookup() -> None:
    h = _Holder(step=[[0, 300], [10, 400], [25, 800]], linear=[[0, 0.0], [1000, 0.1], [3000, 0.01]])
    assert [h.step.at(g) for g in (0, 9, 10, 24, 25, 10**9)] == [300, 300, 400, 400, 800, 800]
    assert h.linear.at(0) == 0.0
    assert h.linear.at(500) == pytest.approx(0.05)
    assert h.linear.at(1000) == pytest.approx(0.1)
    assert h.linear.at(2000) == pytest.approx(0.055)
    assert h.linear.at(5000) == pytest.approx(0.01)
    with pytest.raises(ValueError, match=">= 0"):
        h.step.at(-1)


def test_inference_backend_names_are_validated() -> None:
    assert load_config(PARAMS, preset="paper").inference.backend is Backend.ORT_CPU
    for name in ("ort-cpu", "torch", "ort-gpu", "tensorrt"):
        assert load_config(PARAMS, preset="smoke", overrides={"inference.backend": name}).inference.backend.value == name
    with pytest.raises(ConfigError, match=r"inference\.backend: .*'ort-cpu', 'torch', 'ort-gpu' or 'tensorrt'.*'cuda'"):
        load_config(PARAMS, preset="smoke", overrides={"inference.backend": "cuda"})


def test_world_size_zero_is_one_rank_per_gpu() -> None:
    cfg = load_config(PARAMS, preset="smoke", overrides={"train.world_size": 0}).train
    assert resolve_world_size(cfg, gpus=0).world_size == 1  # no GPU: one process
    assert resolve_world_size(cfg, gpus=4).local_batch == 8
    explicit = load_config(PARAMS, preset="smoke").train
    assert resolve_world_size(explicit, gpus=4) is explicit  # an explicit size is kept
    with pytest.raises(ValueError, match="global_batch 32 does not split over 3 ranks"):
        resolve_world_size(cfg, gpus=3)
    with pytest.raises(ValueError, match="resolve_world_size"):
        _ = cfg.local_batch
