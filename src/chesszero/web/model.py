"""Which model the page shows, and what to say about it.

``choose_model`` takes the ``chesszero web`` options: ``--model FILE`` serves
that artifact; ``--campaign NAME`` the campaign's active artifact (from its
durable state, ``runs/<NAME>/state.json``); ``--registry NAME`` the version
of a registered model that MLflow's ``active`` alias names (``registry``);
none of them, the active artifact of the most recently updated campaign
under ``runs/``. The rating is the latest
ladder summary (``evals/gen_NNNN/summary.txt``) written since that artifact
became active. A published artifact carries its golden file
(``publish.golden``); one published before golden files existed gets it
written now, from the same artifact and calibration positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chesszero.campaign.context import CampaignPaths, check_name
from chesszero.campaign.state import CampaignState, StateStore
from chesszero.publish.artifact import load_artifact
from chesszero.publish.golden import export_golden, golden_path, positions_file


@dataclass(frozen=True)
class ServedModel:
    """The artifact behind the page and its description."""

    path: Path
    golden: Path
    label: str
    """Short name: the campaign and generation, or the file name."""
    detail: str
    """One line: network size and precision, campaign, generation, rating."""
    golden_written: bool = False
    """True when the golden file was written at startup (the artifact had none)."""

    def to_info(self) -> dict[str, object]:
        return {"label": self.label, "detail": self.detail, "artifact": str(self.path)}


def _campaign_artifact(root: Path, name: str) -> tuple[Path, CampaignState, CampaignPaths]:
    paths = CampaignPaths(root / "runs" / check_name(name))
    store = StateStore(paths.state)
    if not store.exists():
        raise ValueError(f"no campaign {name!r}: {paths.state} not found")
    state = store.load()
    if state.active_artifact is None:
        raise ValueError(f"campaign {name!r} has no active artifact yet ({paths.state})")
    path = Path(state.active_artifact)
    return (path if path.is_absolute() else root / path), state, paths


def latest_campaign(root: Path) -> str:
    """The most recently updated campaign under ``root/runs`` with an active artifact."""
    found = []
    for state_file in (root / "runs").glob("*/state.json"):
        try:
            if StateStore(state_file).load().active_artifact is not None:
                found.append((state_file.stat().st_mtime, state_file.parent.name))
        except ValueError:
            continue
    if not found:
        raise ValueError(f"no campaign with an active artifact under {root / 'runs'}; "
                         "give --campaign NAME or --model ART.onnx")
    return max(found)[1]


def rating_text(paths: CampaignPaths, since_generation: int | None) -> str:
    """The latest ladder summary since `since_generation`, as one line ('not rated yet' without one)."""
    summaries = sorted(paths.dir.glob("evals/gen_*/summary.txt"))
    for summary in reversed(summaries):
        generation = int(summary.parent.name.removeprefix("gen_"))
        if since_generation is not None and generation < since_generation:
            break
        lines = [line.strip() for line in summary.read_text().splitlines() if line.strip()]
        if lines:
            return f"rated at generation {generation}: " + "; ".join(lines[:2])
    return "not rated yet"


def _with_golden(path: Path) -> tuple[Path, bool]:
    golden = golden_path(path)
    if golden.is_file():
        return golden, False
    source = positions_file()
    if source is None:
        raise ValueError(f"{golden} is missing and no calibration positions file exists to write it")
    return export_golden(path, source), True


def choose_model(*, root: Path = Path("."), campaign: str | None = None, model: Path | None = None,
                 registry: str | None = None) -> ServedModel:
    """The artifact to serve (module docstring); ValueError naming what is missing or unusable."""
    if sum(x is not None for x in (campaign, model, registry)) > 1:
        raise ValueError("give one of --campaign, --model and --registry")
    root = root.resolve()
    if model is not None:
        path, where = Path(model), None
    elif registry is not None:
        from chesszero.web.registry import registry_model

        found = registry_model(root, registry)
        path, where = found.path, (f"{found.name} v{found.version}",
                                   f"MLflow model {found.name} version {found.version} (alias active)",
                                   found.generation, found.rating)
    else:
        name = campaign or latest_campaign(root)
        path, state, paths = _campaign_artifact(root, name)
        generation = state.active_generation
        where = (name, f"campaign {name}", generation, rating_text(paths, generation))
    if not path.is_file():
        raise ValueError(f"model file not found: {str(path)!r}")
    meta = load_artifact(path).metadata  # ArtifactError (a ValueError) names the file
    golden, written = _with_golden(path)
    network = f"{meta.network_size} {meta.precision.value}"
    if where is None:
        label, detail = path.name, f"{path} · {network} · not from a campaign (no generation or rating)"
    else:
        name, source, generation, rating = where
        gen = "initial network" if generation is None else f"generation {generation}"
        label = f"{name}, {gen}"
        detail = f"{source} · {gen} · {network} · {rating} · {path}"
    return ServedModel(path=path, golden=golden, label=label, detail=detail, golden_written=written)
