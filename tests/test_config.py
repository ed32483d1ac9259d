"""Tests of the typed recipe: presets load, bad keys/values are named, schedules look up."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from chesszero.config import (
    Config,
    ConfigError,
    LinearSchedule,
    Reflection,
    StepSchedule,
    deep_merge,
    load_config,
    preset_names,
)

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def test_presets_are_smoke_cpu_paper() -> None:
    assert preset_names(PARAMS) == ["smoke", "cpu", "paper"]


@pytest.mark.parametrize("preset", ["smoke", "cpu", "paper"])
def test_each_preset_loads(preset: str) -> None:
    cfg = load_config(PARAMS, preset=preset)
    assert isinstance(cfg, Config)
    assert cfg.preset == preset
    assert cfg.train.global_batch % cfg.train.world_size == 0


def test_paper_preset_has_paper_values() -> None:
    cfg = load_config(PARAMS, preset="paper")
    assert cfg.model.size == "14x160"
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
    assert (t.steps_per_quantum, t.global_batch, t.local_batch) == (500, 2048, 256)
    assert (t.momentum, t.nesterov, t.weight_decay, t.grad_clip) == (0.9, True, 1e-4, 1.0)
    assert t.lr.at(0) == 0.0 and t.lr.at(1000) == pytest.approx(0.1)
    assert t.lr.at(10**7) == pytest.approx(0.01)
    assert t.reflection is Reflection.NO_CASTLING and t.bf16
    w = t.loss_weights
    assert (w.policy, w.value, w.next_policy, w.length) == (1.0, 1.0, 0.15, 0.1)
    p = cfg.publish
    assert (p.calibration_positions, p.min_agreement, p.max_kl, p.max_wdl_mae) == (516, 0.95, 0.01, 0.02)


def test_smoke_preset_is_tiny() -> None:
    cfg = load_config(PARAMS, preset="smoke")
    assert cfg.model.shape.blocks <= 2 and cfg.model.shape.channels <= 16
    assert cfg.search.visit_cap.at(10**6) <= 16
    assert cfg.train.steps_per_quantum * cfg.train.global_batch <= 512


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
    assert cfg.model.size == "6x64"
    merged = deep_merge({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"c": 5}})
    assert merged == {"a": {"b": 1, "c": 5}, "d": 3}


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
