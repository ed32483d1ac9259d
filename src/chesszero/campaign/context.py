"""A campaign on disk: its directory layout, resolved recipe and state.

``runs/<campaign>/`` holds everything a campaign owns::

    state.json            durable progress (chesszero.campaign.state)
    phases.jsonl          when each stage started and ended (chesszero.campaign.phaselog)
    config.json           the resolved recipe (also logged to MLflow)
    replay.bin            the replay ring store
    shards/gen_NNNN/      self-play game records (Parquet), one file per actor call
    actors/actor_K/       per-actor restart archive and handed-back games
    train.pt              the training checkpoint (model, optimizer, sampler, credit)
    candidate.pt          a larger candidate's checkpoint while one trains (progressive sizing)
    candidate_gate.json   its promotion gate (matches against the active artifact)
    checkpoints/          checkpoint copies on the campaign's cadence
    artifacts/gen_NNNN/   published ONNX artifacts and fidelity reports
    artifacts/candidate_gen_NNNN/  the candidate's artifacts
    artifacts/active.json the activation state (which artifact actors use)
    evals/gen_NNNN/       ladder and promotion matches (JSON + PGN)
    resign.json           the resignation calibrator
    gate.json             the promotion gate

Stages receive a :class:`Campaign` and read only what they need from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chesszero.campaign.state import CampaignState, StateStore, write_json_atomic
from chesszero.config import Config, load_config

if TYPE_CHECKING:
    from chesszero.campaign.tracking import Tracker

RUNTIME_SECTIONS = ("inference",)
"""Recipe sections that say where the network runs, not what the campaign learns:
a campaign may resume with them changed (e.g. moved onto a GPU machine)."""

NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


@dataclass(frozen=True)
class CampaignPaths:
    """Where each part of a campaign lives."""

    dir: Path

    @property
    def state(self) -> Path:
        return self.dir / "state.json"

    @property
    def phase_log(self) -> Path:
        return self.dir / "phases.jsonl"

    @property
    def config(self) -> Path:
        return self.dir / "config.json"

    @property
    def overrides(self) -> Path:
        """Recipe overrides the campaign was started with (``--set``), kept for every later open."""
        return self.dir / "overrides.json"

    @property
    def replay(self) -> Path:
        return self.dir / "replay.bin"

    @property
    def checkpoint(self) -> Path:
        return self.dir / "train.pt"

    @property
    def candidate(self) -> Path:
        return self.dir / "candidate.pt"

    @property
    def candidate_gate(self) -> Path:
        return self.dir / "candidate_gate.json"

    def candidate_artifact_dir(self, generation: int) -> Path:
        return self.dir / "artifacts" / f"candidate_gen_{generation:04d}"

    @property
    def activation(self) -> Path:
        return self.dir / "artifacts" / "active.json"

    @property
    def resign(self) -> Path:
        return self.dir / "resign.json"

    @property
    def gate(self) -> Path:
        return self.dir / "gate.json"

    def shards(self, generation: int) -> Path:
        return self.dir / "shards" / f"gen_{generation:04d}"

    def actor(self, index: int) -> Path:
        return self.dir / "actors" / f"actor_{index}"

    def artifact_dir(self, generation: int | None) -> Path:
        """Artifacts of a generation's quantum; None: the step-0 network."""
        return self.dir / "artifacts" / ("initial" if generation is None else f"gen_{generation:04d}")

    def evals(self, generation: int) -> Path:
        return self.dir / "evals" / f"gen_{generation:04d}"


def check_name(name: str) -> str:
    if not name or not set(name) <= NAME_CHARS or name.startswith("."):
        raise ValueError(f"campaign name {name!r} must use letters, digits, '-', '_' or '.'")
    return name


ANY = object()
"""In ``ADDED_KEYS``: the key changes nothing whatever its value (its switch is off)."""

ADDED_KEYS: dict[str, Any] = {
    "search.root": "puct",
    "search.gumbel": ANY,  # read only with root gumbel
    "selfplay.full_search_fraction": 1.0,
    "selfplay.fast_visits": ANY,  # read only with full_search_fraction < 1
    "evaluate.adaptive_rungs": 0,
    "campaign.actor_attempts": ANY,  # how often a failed actor job is retried, not what it learns
    "campaign.max_rejected_shard_fraction": ANY,  # whether a bad shard stops the run, not what it learns
    "nnue": ANY,  # the NNUE student's distillation (chesszero nnue build), read by no campaign stage
    "publish.int8_stem": False,
    "search.moves_left": {"slope": 0.0, "cap": 0.0345, "linear": 1.6521, "quadratic": -0.6521},
    "publish.max_moves_left_mae": ANY,  # read only with search.moves_left.slope > 0
    "model.se_ratio": 0,
    "model.attack_planes": False,
    "search.eval_root": None,
    "evaluate.parallel_matches": ANY,  # how many matches run at once, not which games they play
    "selfplay.random_opponent_fraction": 0.0,
    "selfplay.random_opponent_min_lead": ANY,  # read only with random_opponent_fraction > 0
    "selfplay.random_opponent_policy_fraction": 0.0,
    "train.optimizer": "sgd",
    "train.loss_weights.mate_rows": 1.0,
    "train.loss_weights.stalemate_rows": 1.0,
}
"""Recipe keys added after campaigns existed, with the value that reproduces
what those campaigns did: a campaign started before a key existed resumes
while the key holds that value (``Campaign.check_recipe``)."""


def fill_added_keys(started: dict[str, Any], now: dict[str, Any]) -> None:
    """Gives `started` (a recipe written before some ``ADDED_KEYS`` existed)
    the current value of each missing one that is at its neutral value."""
    for key, neutral in ADDED_KEYS.items():
        *path, last = key.split(".")
        s, n = started, now
        for part in path:
            s, n = s.get(part, {}), n.get(part, {})
        if last in s or last not in n or not isinstance(s, dict):
            continue
        if neutral is ANY or n[last] == neutral:
            s[last] = n[last]


def _diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]


@dataclass
class Campaign:
    """One campaign: project root, name, recipe, paths and state store."""

    root: Path
    name: str
    preset: str
    cfg: Config
    paths: CampaignPaths
    states: StateStore
    overrides: dict[str, Any] = field(default_factory=dict)  # dotted recipe overrides it was started with
    _tracker: Tracker | None = field(default=None, repr=False, compare=False)
    _gate_runtimes: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def tracker(self, run_id: str | None, *, uid: str | None = None) -> Tracker:
        """The campaign's MLflow run `run_id`, kept for this object's life; when
        None, the run tagged with `uid`, made if there is none."""
        from chesszero.campaign.tracking import Tracker

        if self._tracker is None or run_id is None or self._tracker.run_id != run_id:
            self._tracker = Tracker(self.root, self.name, run_id=run_id, uid=uid)
        return self._tracker

    def gate_runtime(self, backend: str) -> Any:
        """The fidelity gate's runtime for `backend`, kept for this object's
        life: a TensorRT runtime refits its engine for each new artifact (paper 5.3)."""
        from chesszero.publish.backends import make_runtime

        if backend not in self._gate_runtimes:
            self._gate_runtimes[backend] = make_runtime(backend, threads=None)
        return self._gate_runtimes[backend]

    @classmethod
    def open(cls, root: Path, name: str, *, preset: str, params: Path | None = None,
             overrides: dict[str, Any] | None = None) -> Campaign:
        """Loads the recipe (validated; errors name the key) and the campaign
        directory. An existing campaign must be resumed with its own preset.
        ``overrides`` (dotted keys, as ``--set``): once ``keep_overrides``
        stored them, every later open without them applies the stored ones,
        and one with different ones is refused."""
        root = root.resolve()
        check_name(name)
        paths = CampaignPaths(root / "runs" / name)
        stored = json.loads(paths.overrides.read_text()) if paths.overrides.exists() else None
        if overrides is None:
            overrides = stored or {}
        elif stored is not None and dict(overrides) != stored:
            raise ValueError(f"campaign {name!r} was started with overrides {stored}, not {dict(overrides)}; "
                             f"resume it with the same --set (or none), or use another name")
        cfg = load_config(params or root / "params.yaml", preset=preset, overrides=overrides)
        states = StateStore(paths.state)
        if states.exists():
            existing = states.load()
            if existing.preset != preset:
                raise ValueError(f"campaign {name!r} was started with preset {existing.preset!r}, "
                                 f"not {preset!r}; use another name or the same preset")
        campaign = cls(root, name, preset, cfg, paths, states, dict(overrides))
        campaign.check_recipe()
        return campaign

    def check_recipe(self) -> None:
        """Refuses to resume with a recipe that differs from the one the
        campaign started with (credit and schedules would silently drift);
        ``RUNTIME_SECTIONS`` may differ."""
        if not self.paths.config.exists():
            return
        started = json.loads(self.paths.config.read_text())["recipe"]
        now = self.cfg.model_dump(mode="json")
        if "late_tail" not in started.get("selfplay", {}) and self.cfg.selfplay.late_tail.is_off:
            # started before the setting existed, i.e. with the retained design it leaves as it is
            started["selfplay"]["late_tail"] = now["selfplay"]["late_tail"]
        fill_added_keys(started, now)
        changed = sorted(k for k in _diff(started, now) if k.split(".")[0] not in RUNTIME_SECTIONS)
        if changed:
            raise ValueError(f"campaign {self.name!r} was started with a different recipe; changed keys: "
                             f"{', '.join(changed[:10])}; restore params.yaml or start a new campaign name")

    def keep_overrides(self) -> None:
        """Stores this campaign's overrides for every later open (stages run in
        other processes, resumes); a campaign with none stores nothing."""
        if self.overrides and not self.paths.overrides.exists():
            self.paths.dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.paths.overrides, self.overrides)

    def load_state(self) -> CampaignState:
        if self.states.exists():
            return self.states.load()
        return CampaignState(name=self.name, preset=self.preset, seed=self.cfg.campaign.seed)

    def save_state(self, state: CampaignState) -> None:
        self.states.save(state)

    def write_config(self) -> dict[str, Any]:
        resolved = self.cfg.model_dump(mode="json")
        write_json_atomic(self.paths.config, {"preset": self.preset, "overrides": self.overrides, "recipe": resolved})
        return resolved

    def summary(self) -> dict[str, Any]:
        state = self.load_state()
        return {"campaign": self.name, "preset": self.preset, "generation": state.generation,
                "phase": state.phase.value, "active_artifact": state.active_artifact,
                "counters": json.loads(json.dumps(state.counters.__dict__)), "finished": state.finished}
