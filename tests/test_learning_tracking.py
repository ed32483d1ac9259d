"""The learning benchmark's MLflow run (issue 22): the recipe diff from the
``cpu`` preset that tags it, and the metrics it carries."""

from __future__ import annotations

import sys

from campaign_support import REPO

sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "reports")]

from learning_support import climb_summary  # noqa: E402
from learning_tracking import benchmark_metrics, recipe_diff, recipe_tags  # noqa: E402


def test_the_recipe_diff_from_the_cpu_preset_names_each_changed_key() -> None:
    base = {"search": {"root": "puct", "c_puct": 1.25, "gumbel": {"considered": 16}}, "model": {"size": "6x64"}}
    recipe = {"search": {"root": "gumbel", "c_puct": 1.25, "gumbel": {"considered": 8}},
              "model": {"size": "6x64", "se_ratio": 4}, "train": {"stages": [1, 2]}}
    diff = recipe_diff(recipe, base)
    assert diff == {"model.se_ratio": "4", "search.gumbel.considered": "8", "search.root": "gumbel",
                    "train.stages": "[1, 2]"}
    assert recipe_diff(base, recipe)["model.se_ratio"] == "<absent>"
    assert recipe_diff(base, base) == {}
    tags = recipe_tags(diff)
    assert tags["recipe.search.root"] == "gumbel" and tags["recipe.base"] == "cpu" and tags["recipe.changes"] == "4"


def test_the_recipe_diff_of_real_presets() -> None:
    from chesszero.config import load_config

    cpu = load_config(REPO / "params.yaml", preset="cpu").model_dump(mode="json")
    smoke = load_config(REPO / "params.yaml", preset="smoke").model_dump(mode="json")
    assert recipe_diff(cpu, cpu) == {}
    diff = recipe_diff(smoke, cpu)
    assert diff["evaluate.openings"] == str(smoke["evaluate"]["openings"]) and "model.size" in diff


def test_benchmark_metrics_carry_ratings_gains_and_policy_counts() -> None:
    got = benchmark_metrics(climb_summary())
    assert got["final/searched"] == 700.0 and got["final/searched_lo"] == 650.0 and got["final/searched_bound"] == 0
    assert got["control/policy"] == -300.0 and got["control/policy_bound"] == -1.0
    assert "control/policy_lo" not in got and got["control/policy_hi"] == -300.0
    assert got["gain/searched"] == 580.0 and got["gain/policy_bound"] == 1.0 and "gain/policy_hi" not in got
    assert got["score/control/searched/greedy"] == 0.2 and got["stalemates/final/policy/random"] == 47.0
    assert got["generations"] == 0
