"""Starting a campaign from the command line: through the Prefect flow
(default; ephemeral local API unless PREFECT_API_URL points at a server) or
directly in this process (``--no-prefect``)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from chesszero.campaign import phaselog
from chesszero.campaign.context import Campaign


def _flow() -> Any:
    """The flow (it maps the actors over the recipe's Dask scheduler or threads itself)."""
    # The ephemeral API server can take tens of seconds to start on a busy machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # no telemetry calls out
    from chesszero.campaign.flow import final_recipe

    return final_recipe


def run_campaign(*, preset: str, name: str | None = None, root: Path = Path("."), generations: int | None = None,
                 hours: float | None = None, use_prefect: bool = True, progress: bool = True,
                 overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Runs or resumes a campaign; returns its summary. ``overrides`` (dotted
    recipe keys) are stored with a new campaign and apply to every stage."""
    root = root.resolve()
    name = name or f"{preset}-main"
    campaign = Campaign.open(root, name, preset=preset, overrides=overrides or None)
    campaign.keep_overrides()
    console = Console()
    console.print(f"[bold]campaign {name}[/] preset {preset}: {campaign.paths.dir}")
    if campaign.overrides:
        console.print("overrides: " + ", ".join(f"{k}={v}" for k, v in campaign.overrides.items()), soft_wrap=True)
    if use_prefect:
        summary = _flow()(preset=preset, campaign=name, root=str(root), generations=generations,
                          hours=hours, progress=progress)
    else:
        from chesszero.campaign.dispatch import Limits, run_local
        from chesszero.campaign.progress import Reporter

        with Reporter(campaign, enabled=progress, console=console) as reporter:
            run_local(campaign, Limits(generations, hours), reporter)
        summary = campaign.summary()
    console.print_json(json.dumps(summary))
    return summary


def campaign_status(*, preset: str, name: str | None = None, root: Path = Path(".")) -> dict[str, Any]:
    """The campaign's state (generation, phase, active artifact, counters), its
    wall time per stage so far (``phaselog.stage_times``) and the shards kept
    aside under rejected/ (``quarantine``), each with its reason."""
    from chesszero.campaign.quarantine import rejected_shards

    campaign = Campaign.open(root.resolve(), name or f"{preset}-main", preset=preset)
    if not campaign.states.exists():
        raise ValueError(f"no campaign {campaign.name!r} under {campaign.paths.dir}")
    times = phaselog.stage_times(phaselog.read(campaign.paths.phase_log))
    return {**campaign.summary(), "stages": [t.to_dict() for t in times],
            "rejected_shards": [dataclasses.asdict(r) for r in rejected_shards(campaign.paths)]}
