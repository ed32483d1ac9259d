"""Serve the `final-recipe` deployments, one per preset.

With a Prefect server running (`prefect server start`, and
`PREFECT_API_URL=http://127.0.0.1:4200/api` exported), start this process
and trigger campaigns from anywhere:

    python flows/serve.py                      # campaigns under this project root
    python flows/serve.py --root /data/chess   # or under another project root
    prefect deployment run final-recipe/cpu
    prefect deployment run final-recipe/smoke --param generations=1

Runs execute in this process's machine, in the project root, and resume
from the campaign state like `make run` does. Each run reads the preset's
recipe from the root's params.yaml when it starts: with
``campaign.dask_address`` set its self-play actors run on that Dask
scheduler's workers, as under `make run`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect import serve
from prefect.deployments.runner import EntrypointType

from chesszero.campaign.flow import final_recipe

ROOT = Path(__file__).resolve().parent.parent

PRESETS = ("smoke", "cpu", "paper")


def deployments(root: Path = ROOT) -> list:
    # By module path: loaded from its file, the flow's module would be named `flow`,
    # and Dask workers could not unpickle the actor task (`No module named 'flow'`).
    return [final_recipe.to_deployment(name=preset, parameters={"preset": preset, "root": str(root.resolve())},
                                       description=f"chesszero campaign, preset {preset}",
                                       entrypoint_type=EntrypointType.MODULE_PATH)
            for preset in PRESETS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="project root holding params.yaml and data/")
    args = parser.parse_args()
    if not (args.root / "params.yaml").is_file():
        parser.error(f"--root {args.root}: no params.yaml there")
    serve(*deployments(args.root))


if __name__ == "__main__":
    main()
