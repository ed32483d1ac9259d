"""The generation state machine: one function per phase.

Each function takes the campaign, checks that the durable state is at its
phase, does the work (idempotently), logs to MLflow, advances and saves the
state. ``dispatch`` runs them in order (in this process or as Prefect tasks
of ``flow``); nothing here knows Prefect.
Order per generation (SPEC, DESIGN data flow): self-play -> materialise ->
train -> publish (fidelity gate, promotion gate) -> resignation ->
evaluation (on the cadence).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from chesszero.campaign import metrics as M
from chesszero.campaign import progressive
from chesszero.campaign.context import Campaign
from chesszero.campaign.learn_stage import (
    UnfundedQuantum,
    available_presentations,
    ingest,
    initial_checkpoint,
    load_resign,
    recalibrate_resignation,
    snapshot_replay,
    train,
)
from chesszero.campaign.quarantine import REASON_SUFFIX
from chesszero.campaign.selfplay_stage import (
    ActorJob,
    ActorSummary,
    aggregate,
    cap_metrics,
    plan_selfplay,
    positions_needed,
    run_actor_job,
    shard_summaries,
)
from chesszero.campaign.state import CampaignState, Phase
from chesszero.campaign.tracking import Tracker, environment_params, flatten


class PhaseError(RuntimeError):
    """A phase function was called while the campaign is elsewhere."""


def tracker(campaign: Campaign, state: CampaignState) -> Tracker:
    """The campaign's MLflow run (created by ``bootstrap``, reused after a resume)."""
    return campaign.tracker(state.mlflow_run_id)


def _expect(state: CampaignState, phase: Phase) -> None:
    if state.phase != phase:
        raise PhaseError(f"campaign is at phase {state.phase.value!r}, not {phase.value!r}")


@dataclass
class PhaseRun:
    """One phase's work in progress: the loaded state, the metrics it will log
    and, unless `skip` is set, the advance to the next phase on success."""

    campaign: Campaign
    state: CampaignState
    started: float
    metrics: dict[str, float] = field(default_factory=dict)
    skip: bool = False

    @property
    def tracker(self) -> Tracker:
        return tracker(self.campaign, self.state)


@contextmanager
def _phase(campaign: Campaign, phase: Phase, started: float | None = None) -> Iterator[PhaseRun]:
    """The prologue and epilogue every phase shares: load the durable state and
    check it is at `phase`; on success add the phase's wall time, log its
    metrics at the generation's step, advance and save. An exception leaves the
    state as it was (the phase reruns on resume); `skip` leaves the saving to
    the phase (e.g. an unfunded quantum sends the generation back)."""
    started = time.time() if started is None else started
    state = campaign.load_state()
    _expect(state, phase)
    run = PhaseRun(campaign, state, started)
    yield run
    if run.skip:
        return
    state.wall_seconds += time.time() - started
    run.metrics = {**run.metrics, M.WALL_S: state.wall_seconds, M.GENERATION: state.generation}
    run.tracker.log_metrics(run.metrics, step=state.generation)
    state.advance()
    campaign.save_state(state)


def bootstrap(campaign: Campaign) -> CampaignState:
    """Creates the campaign once: MLflow run, resolved config, the step-0
    network and its published artifact (activated if it passes fidelity)."""
    from chesszero.campaign.publish_stage import publish_initial

    state = campaign.load_state()
    if state.mlflow_run_id is None:
        if not state.uid:  # saved before the run exists: a rerun finds the run by it, never makes two
            state.uid = uuid.uuid4().hex
            campaign.save_state(state)
        state.mlflow_run_id = campaign.tracker(None, uid=state.uid).run_id
        campaign.save_state(state)
    if not campaign.paths.config.exists() or not tracker(campaign, state).has_artifact("config.json"):
        # config.json is logged last: a kill before it repeats this (params already logged are kept)
        resolved = campaign.write_config()
        t = tracker(campaign, state)
        t.log_params({"preset": campaign.preset, "campaign": campaign.name,
                      **flatten(resolved), **environment_params(campaign.root)})
        t.log_artifact(campaign.paths.config)
    if state.active_artifact is None:
        initial_checkpoint(campaign)
        state.active_artifact, state.active_generation = publish_initial(campaign, tracker(campaign, state))
        campaign.save_state(state)
    return state


def _limits(campaign: Campaign, generations: int | None, hours: float | None) -> tuple[int, float]:
    gens = generations if generations is not None else campaign.cfg.campaign.generations
    limit_h = hours if hours is not None else campaign.cfg.campaign.wall_clock_hours
    return gens, limit_h * 3600


def budget_left(campaign: Campaign, state: CampaignState, *, generations: int | None = None,
                hours: float | None = None) -> bool:
    """True while another generation may start (checked only between generations)."""
    gens, seconds = _limits(campaign, generations, hours)
    return state.generation < gens and state.wall_seconds < seconds


def is_last(campaign: Campaign, state: CampaignState, *, generations: int | None = None,
            hours: float | None = None) -> bool:
    """True when the current generation is the campaign's last one."""
    gens, seconds = _limits(campaign, generations, hours)
    return state.generation + 1 >= gens or state.wall_seconds >= seconds


def current_resign_threshold(campaign: Campaign) -> float | None:
    if not campaign.cfg.selfplay.resign.enabled:
        return None
    return load_resign(campaign)[0].threshold


def _model_id(state: CampaignState) -> str:
    g = state.active_generation
    return "initial" if g is None or g < 0 else f"gen{g:04d}"


def plan(campaign: Campaign) -> list[ActorJob]:
    """Actor jobs still needed for this generation's self-play."""
    state = campaign.load_state()
    _expect(state, Phase.SELFPLAY)
    threshold = current_resign_threshold(campaign)
    need = positions_needed(campaign.cfg, available_presentations(campaign))
    return plan_selfplay(campaign, state.generation, positions_needed=need, artifact=str(state.active_artifact),
                         model_id=_model_id(state), resign_threshold=threshold)


def finish_selfplay(campaign: Campaign, started: float) -> dict[str, float]:
    with _phase(campaign, Phase.SELFPLAY, started) as run:
        state = run.state
        shards = shard_summaries(campaign.paths, state.generation)
        summaries = [s for s in shards if s.label == "main"]
        agg = aggregate(shards)
        state.counters.games += int(agg["games"])
        state.counters.positions += int(agg["positions"])
        run.metrics = {
            M.SELFPLAY_GAMES: agg["games"], M.SELFPLAY_POSITIONS: agg["positions"],
            M.SELFPLAY_SEARCHES_S: aggregate(summaries)["searches_per_s"] if summaries else agg["searches_per_s"],
            M.NON_DECISIVE: agg["non_decisive_rate"], M.SELFPLAY_GAMES_TOTAL: state.counters.games,
            M.SELFPLAY_POSITIONS_TOTAL: state.counters.positions,
            M.MATERIAL_ASSIST: campaign.cfg.selfplay.material_assist.at(state.generation)}
        for name in M.TERMINATIONS:
            run.metrics[M.termination_key(name)] = agg.get(f"term_{name}", 0.0)
        run.metrics[M.SELFPLAY_CONVERSION_CHANCES] = agg["conversion_opportunities"]
        run.metrics[M.SELFPLAY_CONVERSION_WON] = agg["conversion_converted"]
        if "conversion" in agg:  # no lead of 5+ pawns in any game: no rate
            run.metrics[M.SELFPLAY_CONVERSION] = agg["conversion"]
        if agg["odds_games"]:  # material-odds games are counted apart
            run.metrics[M.SELFPLAY_ODDS_GAMES] = agg["odds_games"]
            run.metrics[M.SELFPLAY_ODDS_NON_DECISIVE] = agg["odds_non_decisive_rate"]
            if "odds_conversion" in agg:
                run.metrics[M.SELFPLAY_ODDS_CONVERSION] = agg["odds_conversion"]
        if agg.get("random_opponent_games"):  # so are the games against a random mover
            run.metrics[M.SELFPLAY_RANDOM_OPPONENT_GAMES] = agg["random_opponent_games"]
            run.metrics[M.SELFPLAY_RANDOM_OPPONENT_NON_DECISIVE] = agg["random_opponent_non_decisive_rate"]
            if "random_opponent_conversion" in agg:
                run.metrics[M.SELFPLAY_RANDOM_OPPONENT_CONVERSION] = agg["random_opponent_conversion"]
        run.metrics.update(cap_metrics(shards))
    return run.metrics


def materialize(campaign: Campaign) -> dict[str, float]:
    with _phase(campaign, Phase.MATERIALIZE) as run:
        state = run.state
        out = ingest(campaign, state, state.generation)
        run.metrics = {M.REPLAY_SIZE: out["size"], M.REPLAY_OCCUPANCY: out["occupancy"],
                       M.REPLAY_ADMITTED_TOTAL: state.counters.rows_admitted,
                       M.REPLAY_SHARDS_REJECTED: len(out["rejected"])}
        if out["rows_added"]:
            run.metrics[M.REPLAY_SURPRISE_AT_CAP] = out["surprise_at_cap"]
            run.metrics[M.REPLAY_WITH_MATE] = out["with_mate"]
            run.metrics[M.REPLAY_WITH_STALEMATE] = out["with_stalemate"]
        for rejected in out["rejected"]:  # the reason files, beside the run's other records
            reason = campaign.paths.dir / f"{rejected.kept_at}{REASON_SUFFIX}"
            run.tracker.log_artifact(reason, f"rejected/gen_{state.generation:04d}")
        every = campaign.cfg.campaign.snapshot_every
        if every and state.generation % every == 0:
            run.metrics["replay/snapshot_rows"] = snapshot_replay(campaign, state.generation)
    return run.metrics


def _train_metrics(stats: dict[str, float] | None) -> dict[str, float]:
    metrics: dict[str, float] = {}
    if stats is None:
        return metrics
    metrics.update({M.TRAIN_LOSS: stats.get("loss_total", float("nan")), M.TRAIN_LR: stats.get("lr_last", 0.0),
                    M.TRAIN_GRAD_NORM: stats.get("grad_norm_mean", 0.0),
                    M.TRAIN_SAMPLES_S: stats.get("samples_per_s", 0.0)})
    for key in ("mean_sample_age", "replay_occupancy"):
        if key in stats:
            metrics[M.REPLAY_SAMPLE_AGE if key == "mean_sample_age" else M.REPLAY_OCCUPANCY] = stats[key]
    for head in M.TRAIN_LOSS_HEADS:
        if f"loss_{head}" in stats:
            metrics[M.loss_key(head)] = stats[f"loss_{head}"]
    return metrics


def train_quantum(campaign: Campaign, overlap: OverlapPlayer | None = None) -> dict[str, float]:
    """Runs the quantum; `overlap` (if given) keeps some actors playing for
    the next generation until training ends, and the in-process trainer then
    takes only the cores they leave (``train.threads.training_beside``). An
    unfunded quantum (e.g. the recipe's batch grew) sends the generation back
    to self-play."""
    from chesszero.replay import CreditLedger
    from chesszero.train import load_checkpoint
    from chesszero.train.threads import training_beside

    with _phase(campaign, Phase.TRAIN) as run:
        state = run.state
        stop = threading.Event()
        results: list[ActorSummary] = []
        errors: list[BaseException] = []
        worker = None
        if overlap is not None:
            def play() -> None:
                try:
                    results.extend(overlap(stop))
                except BaseException as exc:  # noqa: BLE001 - re-raised after training
                    errors.append(exc)

            worker = threading.Thread(target=play, name="overlap-actors", daemon=True)
            worker.start()
        extra: dict[str, float] = {}
        try:
            with training_beside(overlap.actors if overlap is not None else 0):
                stats = train(campaign, state.generation)
                reason = progressive.start_reason(campaign.cfg, state)
                if reason is not None:
                    extra.update(progressive.start_candidate(campaign, state, reason, run.tracker))
                if state.candidate is not None and state.candidate.promoting is None:
                    extra.update(progressive.train_candidate(campaign, state))
        except UnfundedQuantum:
            state.phase = Phase.SELFPLAY
            campaign.save_state(state)
            run.skip = True
            return {}
        finally:
            stop.set()
            if worker is not None:
                worker.join()
        if errors:
            raise errors[0]
        ckpt = load_checkpoint(campaign.paths.checkpoint, map_location="cpu")
        ledger = CreditLedger.from_dict(ckpt.extra["ledger"])
        state.counters.optimizer_steps = int(ckpt.step)
        state.counters.presentations_trained = int(ledger.spent_presentations)
        state.counters.presentations_funded = int(ledger.funded_presentations)
        run.metrics = {**_train_metrics(stats), **extra}
        run.metrics[M.TRAIN_STEP] = state.counters.optimizer_steps
        run.metrics[M.TRAIN_SAMPLES] = state.counters.presentations_trained
        if results:
            run.metrics[M.SELFPLAY_SEARCHES_S_OVERLAP] = aggregate(results)["searches_per_s"]
        cadence = campaign.cfg.campaign.checkpoint_every
        if cadence and state.generation % cadence == 0:
            run.tracker.log_artifact(campaign.paths.checkpoint, f"checkpoints/gen_{state.generation:04d}")
    return run.metrics


def publish(campaign: Campaign) -> dict[str, float]:
    from chesszero.campaign.publish_stage import publish_generation

    with _phase(campaign, Phase.PUBLISH) as run:
        if not progressive.promoted_this_generation(run.state):  # else the candidate's network was published
            run.metrics = publish_generation(campaign, run.state, run.tracker)
        if run.state.candidate is not None:
            run.metrics.update(progressive.judge_candidate(campaign, run.state, run.tracker))
        run.metrics[M.PROGRESSIVE_STAGE] = float(run.state.stage)
    return run.metrics


def resign(campaign: Campaign) -> dict[str, float]:
    with _phase(campaign, Phase.RESIGN) as run:
        out = recalibrate_resignation(campaign, run.state.generation)
        run.metrics = {M.RESIGN_THRESHOLD: out["threshold"] if out["threshold"] is not None else -1.0}
        if out["false_rate_upper"] is not None:
            run.metrics[M.RESIGN_FALSE_UPPER] = out["false_rate_upper"]
    return run.metrics


def evaluate(campaign: Campaign, *, generations: int | None = None, hours: float | None = None,
             final: bool | None = None) -> dict[str, float]:
    """Evaluates the generation; the campaign's last one (by `generations` /
    `hours`, or `final` when given) also gets the visit-budget sweep and ends
    the campaign. A wall budget that this evaluation itself exhausts also ends
    it here: otherwise the next self-play phase would stop the campaign with
    no final evaluation and `finished` never set."""
    from chesszero.campaign.eval_stage import evaluate_generation

    with _phase(campaign, Phase.EVALUATE) as run:
        state = run.state
        last = is_last(campaign, state, generations=generations, hours=hours) if final is None else final
        cadence = campaign.cfg.evaluate.cadence_generations
        if last or state.generation % cadence == 0:
            run.metrics = evaluate_generation(campaign, state, run.tracker, budget_sweep=last)
        if not last and final is None:
            _, seconds = _limits(campaign, generations, hours)
            if state.wall_seconds + (time.time() - run.started) >= seconds:
                last = True
                run.metrics.update(evaluate_generation(campaign, state, run.tracker, ladder=False,
                                                       budget_sweep=True))
        searched = M.joint_elo_key("searched")
        if searched in run.metrics:  # the plateau trigger of progressive sizing reads these
            state.searched_elo.append([state.generation, run.metrics[searched]])
        if last:
            state.finished = True
            run.tracker.set_terminated("FINISHED")
    return run.metrics


def overlap_jobs(campaign: Campaign) -> list[ActorJob]:
    """The jobs of the actors that keep playing (for the next generation)
    while the trainer runs: the first `campaign.overlap_fraction` of the
    actors (on GPUs spread round robin, ``publish.placement``), together
    producing at most the next generation's need."""
    from chesszero.publish.placement import actor_layout

    cfg = campaign.cfg
    layout = actor_layout(cfg)
    count = int(round(layout.actors * cfg.campaign.overlap_fraction))
    if count <= 0:
        return []
    state = campaign.load_state()
    cap = math.ceil(positions_needed(cfg, 0.0) / count)
    threshold = current_resign_threshold(campaign)
    return [ActorJob(str(campaign.root), campaign.name, campaign.preset, actor=i, generation=state.generation + 1,
                     positions=cap, artifact=str(state.active_artifact), model_id=_model_id(state),
                     resign_threshold=threshold, label="overlap", device=layout.device(i)) for i in range(count)]


@dataclass(frozen=True)
class OverlapPlayer:
    """:func:`overlap_jobs` played while the trainer runs, each in its own
    thread of this process (``actors`` of them, one core busy each)."""

    jobs: list[ActorJob]
    slice_positions: int

    @property
    def actors(self) -> int:
        return len(self.jobs)

    def __call__(self, stop: threading.Event) -> list[ActorSummary]:
        out: list[list[ActorSummary]] = [[] for _ in self.jobs]
        errors: list[BaseException] = []

        def one(k: int) -> None:
            try:
                out[k] = run_actor_job(self.jobs[k], stop=stop, slice_positions=self.slice_positions)
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in range(len(self.jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return [s for part in out for s in part]


def overlap_player(campaign: Campaign) -> OverlapPlayer | None:
    """The overlap actors of this generation, or None when the recipe has none."""
    jobs = overlap_jobs(campaign)
    if not jobs:
        return None
    return OverlapPlayer(jobs, slice_positions=max(8, campaign.cfg.selfplay.games_in_flight // 4))


__all__ = ["PhaseError", "bootstrap", "budget_left", "evaluate", "finish_selfplay", "materialize",
           "is_last", "OverlapPlayer", "overlap_jobs", "overlap_player", "plan", "publish", "resign", "train_quantum"]
