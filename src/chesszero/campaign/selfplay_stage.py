"""Self-play phase: plan actor jobs for a generation, run them, count shards.

An :class:`ActorJob` is plain data so Prefect can ship it to a thread, a
process or a Dask worker; :func:`run_actor_job` rebuilds everything it needs
from the campaign directory, plays with the active artifact and writes one
Parquet shard per call (atomically). Progress is the set of shards on disk,
so a rerun after a crash only plays what is still missing. A job that runs
again (its Dask worker died, or the flow resubmitted it) is a new attempt
(``attempts``): it plays only what the job's earlier attempts did not commit,
and an attempt that a newer one of the same actor superseded never commits.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chesszero.campaign import attempts as A
from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign, CampaignPaths
from chesszero.campaign.search_settings import selfplay_search
from chesszero.campaign.state import write_json_atomic
from chesszero.config import Config


@dataclass(frozen=True)
class ActorJob:
    """One actor's share of a generation's self-play."""

    root: str
    campaign: str
    preset: str
    actor: int
    generation: int
    positions: int
    artifact: str
    model_id: str
    resign_threshold: float | None
    label: str = "main"  # "main" or "overlap" (played while the trainer runs)
    device: int = 0  # CUDA ordinal of the actor's inference backend (publish.placement; CPU backends ignore it)
    job_id: str = ""  # set by the plan: the shards of every attempt of this job carry it ("": none)


@dataclass
class ActorSummary:
    """What one actor call produced (also the JSON sidecar of its shard).

    Fields added later have defaults, so sidecars written before them still
    load (``ActorSummary(**json)``); such a shard counts no conversion chances.
    """

    shard: str | None
    actor: int
    games: int  # every finished game, odds games included
    positions: int
    searches: int
    seconds: float
    terminations: dict[str, int]  # natural games (selfplay.actor.ShardReport)
    label: str
    conversion_opportunities: int = 0  # (game, side) leads of 5+ pawns (selfplay.logs.conversion_counts)
    conversion_converted: int = 0  # of those, won by that side
    diagnostics: dict[str, int] = field(default_factory=dict)  # CapDiagnostics counts (selfplay.cap_diagnostics)
    odds_games: int = 0  # material-odds games (not in games' terminations or conversion counts above)
    odds_decisive: int = 0
    odds_conversion_opportunities: int = 0
    odds_conversion_converted: int = 0
    random_opponent_games: int = 0  # games against a random mover (counted apart like odds games)
    random_opponent_decisive: int = 0
    random_opponent_conversion_opportunities: int = 0
    random_opponent_conversion_converted: int = 0
    fast_searches: int = 0  # of searches, fast ones (playout-cap randomisation: not recorded)
    policy_moves: int = 0  # of fast_searches, raw-policy moves against the random mover
    job_id: str = ""  # the ActorJob it belongs to
    attempt: str = ""  # the attempt that wrote it (attempts.Attempt)
    worker: str = ""  # where that attempt ran: Dask worker address, or "local"

    @property
    def searches_per_second(self) -> float:
        return self.searches / self.seconds if self.seconds > 0 else 0.0


def actor_settings(cfg: Config, *, actor: int, seed: int, archive_path: Path) -> Any:
    """Maps the typed recipe onto the self-play actor's settings."""
    from chesszero.selfplay.actor import ActorSettings
    from chesszero.selfplay.archive import ArchiveSettings

    sp = cfg.selfplay
    return ActorSettings(
        actor_id=f"actor{actor}",
        games_in_flight=sp.games_in_flight,
        batch_size=sp.batch_size,
        seed=seed,
        search=selfplay_search(cfg),
        temperature=tuple((int(k), float(v)) for k, v in zip(sp.temperature.keys, sp.temperature.values, strict=True)),
        greedy_after_ply=sp.greedy_after_ply,
        random_opening_min_plies=sp.random_opening_min_plies,
        random_opening_max_plies=sp.random_opening_max_plies,
        restart_fraction=sp.restart_fraction,
        odds_fraction=sp.odds_fraction,
        odds_material=(sp.odds_min_material, sp.odds_max_material),
        random_opponent_fraction=sp.random_opponent_fraction,
        random_opponent_min_lead=sp.random_opponent_min_lead,
        random_opponent_policy_fraction=sp.random_opponent_policy_fraction,
        continuation_fraction=sp.continuation_fraction,
        full_search_fraction=sp.full_search_fraction,
        fast_visits=sp.fast_visits,
        archive=ArchiveSettings(**sp.restart.model_dump()),
        archive_path=archive_path,
    )


def late_tail(cfg: Config, generation: int) -> Any:
    """The recipe's late-tail setting (the paper's earlier design, 6.1) at a
    generation, as the actor's ``LateTail`` (off by default)."""
    from chesszero.config.schema import CutTarget
    from chesszero.selfplay.actor import LateTail

    lt = cfg.selfplay.late_tail
    return LateTail(from_ply=lt.from_ply.at(generation), visits_divisor=lt.visits_divisor,
                    cap_from_preceding=lt.cut_target is CutTarget.PRECEDING)


def shard_summaries(paths: CampaignPaths, generation: int) -> list[ActorSummary]:
    """Summaries of the shards already written for a generation."""
    out = []
    for sidecar in sorted(paths.shards(generation).glob("*.parquet.json")):
        shard = sidecar.with_suffix("")
        if shard.exists():
            out.append(ActorSummary(**json.loads(sidecar.read_text())))
    return out


def shard_files(paths: CampaignPaths, generation: int) -> list[Path]:
    return [Path(s.shard) for s in shard_summaries(paths, generation) if s.shard]


def plan_selfplay(campaign: Campaign, generation: int, *, positions_needed: int, artifact: str,
                  model_id: str, resign_threshold: float | None) -> list[ActorJob]:
    """Splits what is still missing for this generation over the actors
    (``publish.placement``: how many, and each one's GPU)."""
    from chesszero.publish.placement import actor_layout

    done = sum(s.positions for s in shard_summaries(campaign.paths, generation))
    missing = max(0, positions_needed - done)
    if missing == 0:
        return []
    layout = actor_layout(campaign.cfg)
    share = math.ceil(missing / layout.actors)
    return [ActorJob(str(campaign.root), campaign.name, campaign.preset, actor=i, generation=generation,
                     positions=share, artifact=artifact, model_id=model_id,
                     resign_threshold=resign_threshold, device=layout.device(i), job_id=uuid.uuid4().hex[:12])
            for i in range(layout.actors)]


def _load_pending(path: Path) -> list[Any]:
    """The actor's handed-back games; also finishes a commit cut by a crash.

    The actor's commit point is ``pending.json``: it names the shard just
    written with its summary and the games still unfinished after it. A shard
    without a sidecar is only counted once ``pending.json`` names it, so a
    crash before that leaves an ignored orphan and the games replay from the
    previous hand-back: nothing is counted twice.
    """
    from chesszero.selfplay.logs import PendingGame

    if not path.exists():
        return []
    data = json.loads(path.read_text())
    last = data.get("committed")
    if last is not None and last.get("shard"):
        sidecar = Path(last["shard"] + ".json")
        if Path(last["shard"]).exists() and not sidecar.exists():
            write_json_atomic(sidecar, last)
    return [PendingGame.from_dict(d) for d in data.get("pending", [])]


def run_actor_job(job: ActorJob, *, stop: threading.Event | None = None,
                  slice_positions: int | None = None, threads: int = 1) -> list[ActorSummary]:
    """Plays the job's positions with the active artifact in the recipe's
    inference backend (on GPUs, device ``job.device``); one shard per call.

    With ``stop`` the job plays in slices and returns early once it is set
    (used by the actors that overlap the trainer).

    Each call is an attempt (``attempts.begin``: its record and the actor's
    lease). A job with an id plays only what its earlier attempts did not
    commit, and returns their summaries with its own; an attempt that lost the
    actor's lease raises ``SupersededAttempt`` instead of committing.
    """
    from chesszero.publish.loading import load_evaluator
    from chesszero.search.assist import with_material_assist
    from chesszero.selfplay.actor import SelfPlayActor

    campaign = Campaign.open(Path(job.root), job.campaign, preset=job.preset)
    cfg, paths = campaign.cfg, campaign.paths
    actor_dir = paths.actor(job.actor)
    actor_dir.mkdir(parents=True, exist_ok=True)
    seed = (cfg.campaign.seed * 1_000_003 + job.generation * 1009 + job.actor * 17
            + (7 if job.label == "overlap" else 0)) % 2**31
    evaluator = load_evaluator(job.artifact, backend=cfg.inference.backend, threads=threads,
                               device=job.device, plain_onnx=False)
    actor = SelfPlayActor(actor_settings(cfg, actor=job.actor, seed=seed,
                                         archive_path=actor_dir / "archive.sqlite"))
    session = with_material_assist(evaluator,
                                   cfg.selfplay.material_assist.at(job.generation),
                                   scale=cfg.selfplay.material_scale)
    pending_path = actor_dir / "pending.json"
    visits = cfg.search.visit_cap.at(job.generation)
    ply_cap = cfg.selfplay.ply_cap.at(job.generation)
    out_dir = paths.shards(job.generation)
    try:
        attempt = A.begin(paths, job_id=job.job_id, generation=job.generation, label=job.label, actor=job.actor,
                          positions=job.positions)  # the lease before the actor's hand-back is read
        resume = _load_pending(pending_path)
        summaries = [s for s in shard_summaries(paths, job.generation) if job.job_id and s.job_id == job.job_id]
        remaining = job.positions - sum(s.positions for s in summaries)
        actor.archive.evict(job.generation)
        while remaining > 0 and not (stop is not None and stop.is_set()):
            quota = min(remaining, slice_positions) if slice_positions else remaining
            shard = out_dir / f"{job.label}_a{job.actor}_{uuid.uuid4().hex[:10]}.parquet"
            report = actor.play(session, visits=visits, ply_cap=ply_cap, model_id=job.model_id,
                                generation=job.generation, resign_threshold=job.resign_threshold,
                                positions=quota, shard_path=shard, resume=resume,
                                late_tail=late_tail(cfg, job.generation))
            resume = []
            summary = ActorSummary(
                shard=str(report.path) if report.path else None, actor=job.actor, games=report.games,
                positions=report.positions, searches=report.searches, seconds=report.seconds,
                terminations=dict(report.terminations), label=job.label,
                conversion_opportunities=report.conversion.opportunities,
                conversion_converted=report.conversion.converted, diagnostics=asdict(report.diagnostics),
                odds_games=report.odds.games, odds_decisive=report.odds.decisive,
                odds_conversion_opportunities=report.odds.conversion.opportunities,
                odds_conversion_converted=report.odds.conversion.converted,
                random_opponent_games=report.random_opponent.games,
                random_opponent_decisive=report.random_opponent.decisive,
                random_opponent_conversion_opportunities=report.random_opponent.conversion.opportunities,
                random_opponent_conversion_converted=report.random_opponent.conversion.converted,
                fast_searches=report.fast_searches, policy_moves=report.policy_moves, job_id=job.job_id, attempt=attempt.attempt,
                worker=attempt.worker)
            A.check_lease(paths, attempt)
            write_json_atomic(pending_path, {"committed": asdict(summary),
                                             "pending": [p.to_dict() for p in actor.pending]})
            if report.path is not None:
                write_json_atomic(Path(str(report.path) + ".json"), asdict(summary))
            summaries.append(summary)
            remaining -= report.positions
    finally:
        actor.close()
    return summaries


def positions_needed(cfg: Config, available_presentations: float) -> int:
    """New searched positions that fund one quantum given unspent credit."""
    cost = cfg.train.steps_per_quantum * cfg.train.global_batch
    missing = max(0.0, cost - available_presentations)
    return math.ceil(missing / cfg.replay.reuse_ratio)


def cap_metrics(summaries: list[ActorSummary]) -> dict[str, float]:
    """The generation's late-game target diagnostics as campaign metrics (paper
    6.1); a share without games (or rows, or plies) is left out."""
    from chesszero.selfplay.cap_diagnostics import CapDiagnostics

    total = CapDiagnostics()
    for s in summaries:
        total += CapDiagnostics(**s.diagnostics)
    shares = {M.SELFPLAY_CAPPED_SHARE: total.capped_share, M.SELFPLAY_CUT_TARGET_SHARE: total.cut_target_share,
              M.SELFPLAY_INELIGIBLE_SHARE: total.ineligible_share}
    return {k: v for k, v in shares.items() if v is not None}


def aggregate(summaries: list[ActorSummary]) -> dict[str, float]:
    """Generation totals: games, positions, searches/s, terminations and the
    conversion counts (``conversion``, their ratio, only when there was a chance)
    of natural games; the material-odds games' count, non-decisive rate and
    conversion apart (``odds_*``, rates only when there were such games), and
    so the games against a random mover (``random_opponent_*``)."""
    games = sum(s.games for s in summaries)
    per_actor: dict[tuple[int, str], list[float]] = {}
    for s in summaries:  # calls of one actor run one after another; actors run side by side
        acc = per_actor.setdefault((s.actor, s.label), [0.0, 0.0])
        acc[0] += s.searches
        acc[1] += s.seconds
    rate = sum(n / t for n, t in per_actor.values() if t > 0)
    seconds = max((t for _, t in per_actor.values()), default=0.0)
    terms: dict[str, float] = {}
    for s in summaries:
        for k, v in s.terminations.items():
            terms[k] = terms.get(k, 0) + v
    decisive = sum(terms.get(k, 0) for k in ("checkmate", "resignation"))
    natural = sum(terms.values())  # the terminations count natural games only (curriculum games apart)
    chances = sum(s.conversion_opportunities for s in summaries)
    converted = sum(s.conversion_converted for s in summaries)
    conversion = {"conversion": converted / chances} if chances else {}
    odds_games = sum(s.odds_games for s in summaries)
    odds_chances = sum(s.odds_conversion_opportunities for s in summaries)
    odds_converted = sum(s.odds_conversion_converted for s in summaries)
    odds: dict[str, float] = {}
    if odds_games:
        odds["odds_non_decisive_rate"] = 1.0 - sum(s.odds_decisive for s in summaries) / odds_games
    if odds_chances:
        odds["odds_conversion"] = odds_converted / odds_chances
    sparring_games = sum(s.random_opponent_games for s in summaries)
    sparring_chances = sum(s.random_opponent_conversion_opportunities for s in summaries)
    sparring_converted = sum(s.random_opponent_conversion_converted for s in summaries)
    if sparring_games:
        odds["random_opponent_non_decisive_rate"] = (
            1.0 - sum(s.random_opponent_decisive for s in summaries) / sparring_games)
    if sparring_chances:
        odds["random_opponent_conversion"] = sparring_converted / sparring_chances
    searches = sum(s.searches for s in summaries)
    return {"games": games, "positions": sum(s.positions for s in summaries),
            "searches_per_s": rate,
            "fast_search_share": sum(s.fast_searches for s in summaries) / searches if searches else 0.0,
            "non_decisive_rate": 1.0 - decisive / natural if natural else 0.0,
            **{f"term_{k}": v for k, v in terms.items()},
            "conversion_opportunities": chances, "conversion_converted": converted, **conversion,
            "odds_games": odds_games, "odds_conversion_opportunities": odds_chances,
            "odds_conversion_converted": odds_converted,
            "random_opponent_games": sparring_games, **odds,
            "wall_s": seconds, "stamp": time.time()}
