"""Starting a campaign from the command line: through the Prefect flow
(default; ephemeral local API unless PREFECT_API_URL points at a server) or
directly in this process (``--no-prefect``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from chesszero.campaign.context import Campaign


def project_dir() -> Path:
    """The checkout holding ``flows/`` (the package is installed editable from it)."""
    import chesszero

    return Path(chesszero.__file__).resolve().parents[2]


def _flow(root: Path, campaign: Campaign) -> Any:
    # The ephemeral API server can take tens of seconds to start on a busy machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # no telemetry calls out
    for candidate in (project_dir(), root):
        if (candidate / "flows" / "final_recipe.py").exists():
            if str(candidate) not in sys.path:
                sys.path.insert(0, str(candidate))
            break
    else:
        raise ValueError(f"flows/final_recipe.py not found next to the package ({project_dir()}) or in {root}")
    from flows.final_recipe import final_recipe

    address = campaign.cfg.campaign.dask_address
    if address:
        from prefect_dask import DaskTaskRunner

        return final_recipe.with_options(task_runner=DaskTaskRunner(address=address))
    from prefect.task_runners import ThreadPoolTaskRunner

    return final_recipe.with_options(task_runner=ThreadPoolTaskRunner(max_workers=max(1, campaign.cfg.selfplay.actors)))


def run_campaign(*, preset: str, name: str | None = None, root: Path = Path("."), generations: int | None = None,
                 hours: float | None = None, use_prefect: bool = True, progress: bool = True) -> dict[str, Any]:
    """Runs or resumes a campaign; returns its summary."""
    root = root.resolve()
    name = name or f"{preset}-main"
    campaign = Campaign.open(root, name, preset=preset)
    console = Console()
    console.print(f"[bold]campaign {name}[/] preset {preset}: {campaign.paths.dir}")
    if use_prefect:
        summary = _flow(root, campaign)(preset=preset, campaign=name, root=str(root), generations=generations,
                                        hours=hours, progress=progress)
    else:
        from chesszero.campaign.progress import summary_table
        from chesszero.campaign.runner import run_local

        acc: dict[str, Any] = {}

        def on_phase(phase: str, metrics: dict[str, Any]) -> None:
            acc.update(metrics)
            if phase == "evaluate" and progress:
                console.print(summary_table(campaign.load_state().generation - 1, acc))
                acc.clear()

        run_local(campaign, generations=generations, hours=hours, on_phase=on_phase)
        summary = campaign.summary()
    console.print_json(json.dumps(summary))
    return summary


def campaign_status(*, preset: str, name: str | None = None, root: Path = Path(".")) -> dict[str, Any]:
    campaign = Campaign.open(root.resolve(), name or f"{preset}-main", preset=preset)
    if not campaign.states.exists():
        raise ValueError(f"no campaign {campaign.name!r} under {campaign.paths.dir}")
    return campaign.summary()
