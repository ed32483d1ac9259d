"""Serve the `final-recipe` deployments, one per preset.

With a Prefect server running (`prefect server start`, and
`PREFECT_API_URL=http://127.0.0.1:4200/api` exported), start this process
and trigger campaigns from anywhere:

    python flows/serve.py
    prefect deployment run final-recipe/cpu
    prefect deployment run final-recipe/smoke --param generations=1

Runs execute in this process, in the project root, and resume from the
campaign state like `make run` does.
"""

from __future__ import annotations

from pathlib import Path

from prefect import serve

from chesszero.campaign.flow import final_recipe

ROOT = Path(__file__).resolve().parent.parent

PRESETS = ("smoke", "cpu", "paper")


def deployments() -> list:
    return [final_recipe.to_deployment(name=preset, parameters={"preset": preset, "root": str(ROOT)},
                                       description=f"chesszero campaign, preset {preset}")
            for preset in PRESETS]


if __name__ == "__main__":
    serve(*deployments())
