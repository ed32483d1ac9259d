"""Typed recipe configuration: ``params.yaml`` presets -> pydantic models.

Public API::

    from chesszero.config import load_config, Config, ConfigError
    cfg = load_config("params.yaml", preset="smoke", overrides={"train.seed": 3})
    cfg = load_config(preset="cpu", overrides=parse_overrides(["train.seed=3"]))  # CLI --set
    cfg.search.visit_cap.at(generation)      # schedule lookup
"""

from chesszero.config.distill import Supervision
from chesszero.config.loader import (
    REPO_ROOT,
    ConfigError,
    deep_merge,
    load_config,
    parse_overrides,
    preset_names,
)
from chesszero.config.schedules import LinearSchedule, StepSchedule
from chesszero.config.schema import (
    Backend,
    CampaignConfig,
    Config,
    DistillConfig,
    EvaluateConfig,
    InferenceConfig,
    LossWeights,
    ModelConfig,
    NnueConfig,
    OptimizerKind,
    PublishConfig,
    QatWhen,
    Reflection,
    ReplayConfig,
    ResignConfig,
    RestartConfig,
    SearchConfig,
    SelfplayConfig,
    TrainConfig,
)

__all__ = [
    "REPO_ROOT",
    "Backend",
    "CampaignConfig",
    "Config",
    "ConfigError",
    "DistillConfig",
    "EvaluateConfig",
    "InferenceConfig",
    "LinearSchedule",
    "LossWeights",
    "ModelConfig",
    "NnueConfig",
    "OptimizerKind",
    "PublishConfig",
    "QatWhen",
    "Reflection",
    "ReplayConfig",
    "ResignConfig",
    "RestartConfig",
    "SearchConfig",
    "SelfplayConfig",
    "StepSchedule",
    "Supervision",
    "TrainConfig",
    "deep_merge",
    "load_config",
    "parse_overrides",
    "preset_names",
]
