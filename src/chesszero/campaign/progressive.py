"""Progressive model sizing inside the campaign (paper 3.9, 6.3, D.3).

The campaign starts at ``model.size``. When the next stage's trigger fires
(``progressive.after_generations`` into the stage, or a searched-Elo plateau
over ``progressive.plateau_evaluations`` evaluations), a candidate of the next
size is created (``grown`` from the active network, function-preserving, or
``fresh``) in ``candidate.pt``. From then on, each generation:

- train: after the active quantum, the candidate runs its due quanta
  (``candidate_quanta`` per active quantum on average) on the same replay,
  unfunded and counted as catch-up presentations in its own ledger;
- publish: after the routine publication, the candidate goes through the same
  fold/QAT/export/fidelity path and, when it passes, plays one paired searched
  match against the active artifact (every ``progressive.match_every``
  generations). Its gate (``candidate_gate.json``)
  promotes it after ``evaluate.promotion_consecutive`` consecutive scores of at
  least ``evaluate.promotion_score``; a failing score resets the count; errored
  matches do not count. Training loss plays no part in the decision.

Promotion replaces the training checkpoint with the candidate's network (the
active ledger and sampler continue; the candidate's catch-up presentations
are added to it), activates the candidate's artifact and moves the registered
model's ``active`` alias. Every step is idempotent: the gate file records each
match by generation, and ``Candidate.promoting`` finishes a handoff cut by a
crash.
"""

from __future__ import annotations

import math
import os
import shutil
from typing import Any

from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign
from chesszero.campaign.learn_stage import checkpoint_extra, run_quantum
from chesszero.campaign.state import CampaignState, Candidate
from chesszero.campaign.tracking import Tracker
from chesszero.config import Config
from chesszero.config.schema import CandidateStart


def sizes(cfg: Config) -> list[str]:
    """The campaign's size ladder: ``model.size`` then ``progressive.stages`` (with ``model.se_ratio`` and ``model.attack_planes``)."""
    return [size.name for size in cfg.network_sizes()]


def plateaued(elos: list[float], window: int) -> bool:
    """True when the last `window` ratings did not beat the best one before them."""
    if len(elos) <= window:
        return False
    return max(elos[-window:]) <= max(elos[:-window])


def stage_ratings(state: CampaignState) -> list[float]:
    """Searched joint ratings of the evaluations made in the current stage."""
    return [elo for g, elo in state.searched_elo if g >= state.stage_started]


def start_reason(cfg: Config, state: CampaignState) -> str | None:
    """Why a candidate of the next size starts now ("generation" or "plateau"), or None."""
    pc = cfg.progressive
    if state.candidate is not None or state.stage + 1 >= len(sizes(cfg)):
        return None
    if pc.after_generations is not None and state.generation - state.stage_started >= pc.after_generations:
        return "generation"
    if pc.plateau_evaluations is not None and plateaued(stage_ratings(state), pc.plateau_evaluations):
        return "plateau"
    return None


def start_candidate(campaign: Campaign, state: CampaignState, reason: str, tracker: Tracker) -> dict[str, float]:
    """Creates the next stage's candidate checkpoint and records it in the state."""
    import torch

    from chesszero.replay import CreditLedger, ReplayStore
    from chesszero.train import Trainer, init_distributed, load_checkpoint, save_checkpoint
    from chesszero.train.checkpoint import grow_checkpoint

    cfg, paths = campaign.cfg, campaign.paths
    stage = state.stage + 1
    size = sizes(cfg)[stage]
    seed = cfg.train.seed + 7919 * stage
    if cfg.progressive.start is CandidateStart.GROWN:
        ckpt = grow_checkpoint(load_checkpoint(paths.checkpoint), size, seed=seed)
    else:
        torch.manual_seed(seed)
        ckpt = Trainer(cfg.train, size, ctx=init_distributed()).checkpoint()
    # Its own ledger, from the store as it is now: it only counts catch-up.
    with ReplayStore.open(paths.replay, readonly=True) as store:
        ledger = CreditLedger(reuse_ratio=cfg.replay.reuse_ratio, store_total=store.total_appended)
    ckpt.extra = {"ledger": ledger.to_dict(), "candidate_quanta": 0, "created": state.generation,
                  **({"grown_from": ckpt.extra["grown_from"]} if "grown_from" in ckpt.extra else {})}
    paths.candidate_gate.unlink(missing_ok=True)
    save_checkpoint(paths.candidate, ckpt)
    state.candidate = Candidate(size=size, stage=stage, created=state.generation, reason=reason)
    campaign.save_state(state)
    tracker.log_params({f"progressive.candidate_{stage}": f"{size} {cfg.progressive.start.value} at generation "
                                                         f"{state.generation} ({reason})"})
    return {M.CANDIDATE_STARTED: 1.0}


def due_quanta(cfg: Config, candidate: Candidate, generation: int) -> int:
    """Candidate quanta owed through `generation` (one active quantum per generation)."""
    return math.floor(cfg.progressive.candidate_quanta * (generation - candidate.created + 1) + 1e-9)


def train_candidate(campaign: Campaign, state: CampaignState) -> dict[str, float]:
    """Runs the candidate's due catch-up quanta (idempotent: the count lives in its checkpoint)."""
    from chesszero.replay import CreditLedger

    cand, paths, g = state.candidate, campaign.paths, state.generation
    assert cand is not None
    stats = None
    done = int(checkpoint_extra(paths.candidate).get("candidate_quanta", 0))
    for k in range(done, due_quanta(campaign.cfg, cand, g)):
        stats = run_quantum(campaign, paths.candidate, paths.dir / f"candidate_quantum_{k:05d}.json",
                            {"candidate_quanta": k + 1, "generation": g}, catch_up=True)
    extra = checkpoint_extra(paths.candidate)
    metrics = {M.CANDIDATE_QUANTA: float(extra.get("candidate_quanta", 0)),
               M.CANDIDATE_CATCH_UP: float(CreditLedger.from_dict(extra["ledger"]).catch_up_presentations)}
    if stats is not None:
        metrics[M.CANDIDATE_LOSS] = float(stats.get("loss_total", float("nan")))
    return metrics


def _play(campaign: Campaign, candidate: str, active: str, generation: int, index: int) -> Any:
    from chesszero.campaign.head_to_head import paired_match

    return paired_match(campaign, candidate, active, index=index, event=f"promotion gen{generation:04d}",
                        out=campaign.paths.evals(generation) / "candidate_match.pgn")


def _gate(campaign: Campaign, cand: Candidate) -> Any:
    from chesszero.evaluate.gate import PromotionGate

    ev = campaign.cfg.evaluate
    name = f"{cand.size}@gen{cand.created:04d}"
    path = campaign.paths.candidate_gate
    if path.exists():
        gate = PromotionGate.load(path)
        if gate.candidate == name:
            return gate
    return PromotionGate(candidate=name, active="active", threshold=ev.promotion_score,
                         required_passes=ev.promotion_consecutive)


def judge_candidate(campaign: Campaign, state: CampaignState, tracker: Tracker) -> dict[str, float]:
    """Publishes the candidate and plays this generation's promotion match;
    promotes it when its gate says so."""
    from chesszero.campaign.publish_stage import publish_once
    from chesszero.evaluate.gate import MatchStatus

    cand, g = state.candidate, state.generation
    assert cand is not None
    if cand.promoting is not None:
        return _promote(campaign, state, tracker)
    marker = publish_once(campaign, g, tracker, campaign.paths.candidate, campaign.paths.candidate_artifact_dir(g),
                          label=f"candidate_gen_{g:04d}")
    metrics = {M.CANDIDATE_FIDELITY: float(marker["passed"])}
    if not marker["passed"]:
        return metrics
    gate = _gate(campaign, cand)
    match_id = f"gen{g:04d}"
    event = next((e for e in gate.history if e.match_id == match_id), None)
    if event is None and (g - cand.created + 1) % campaign.cfg.progressive.match_every != 0:
        return metrics
    if event is None:
        try:
            result = _play(campaign, marker["artifact"], str(state.active_artifact), g, len(gate.history))
        except Exception:  # noqa: BLE001 - an errored match does not count (SPEC 10); retried next generation
            result = None
        if result is not None:
            elo = result.elo(0.0, resamples=campaign.cfg.evaluate.bootstrap_resamples)
            metrics.update({M.PROMOTION_SCORE: result.score, M.PROMOTION_ELO: elo.estimate,
                            f"{M.PROMOTION_ELO}_lo": elo.lower, f"{M.PROMOTION_ELO}_hi": elo.upper})
        gate.record(match_id, score=None if result is None else result.score,
                    status=MatchStatus.COMPLETED if result is not None else MatchStatus.ERRORED)
        gate.save(campaign.paths.candidate_gate)
        tracker.log_artifact(campaign.paths.candidate_gate, f"promotion/gen_{g:04d}")
    elif event.score is not None:
        metrics[M.PROMOTION_SCORE] = event.score
    metrics[M.PROMOTION_PASSES] = float(gate.passes)
    metrics[M.PROMOTION_PROMOTED] = float(gate.promoted)
    if gate.promoted:
        cand.promoting = marker["artifact"]
        campaign.save_state(state)
        metrics.update(_promote(campaign, state, tracker))
    return metrics


def _replace_checkpoint(campaign: Campaign, state: CampaignState) -> None:
    """The candidate's network becomes the training checkpoint; the active
    ledger (plus the candidate's catch-up) and sampler state continue."""
    from chesszero.replay import CreditLedger
    from chesszero.train import load_checkpoint, save_checkpoint

    paths = campaign.paths
    if not paths.candidate.exists():  # replaced before a crash
        return
    cand, main = load_checkpoint(paths.candidate), load_checkpoint(paths.checkpoint)
    ledger = CreditLedger.from_dict(main.extra["ledger"])
    ledger.catch_up_presentations += CreditLedger.from_dict(cand.extra["ledger"]).catch_up_presentations
    archive = paths.dir / "checkpoints" / f"stage{state.stage}_{main.model_size}.pt"
    archive.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(paths.checkpoint, archive)
    cand.extra = {**main.extra, "ledger": ledger.to_dict(),
                  "promoted": {"size": cand.model_size, "from": main.model_size, "generation": state.generation}}
    save_checkpoint(paths.checkpoint, cand)
    os.remove(paths.candidate)


def _promote(campaign: Campaign, state: CampaignState, tracker: Tracker) -> dict[str, float]:
    from chesszero.campaign.publish_stage import activate
    from chesszero.publish import load_artifact

    cand = state.candidate
    assert cand is not None and cand.promoting is not None
    _replace_checkpoint(campaign, state)
    g = state.generation
    state.active_artifact = activate(campaign, load_artifact(cand.promoting), tracker, f"gen{g:04d}-{cand.size}")
    state.active_generation = g
    state.stage, state.stage_started = cand.stage, g + 1
    state.promotion["last"] = {"generation": g, "size": cand.size, "created": cand.created}
    state.candidate = None
    campaign.save_state(state)
    return {M.PROMOTION_PROMOTED: 1.0, M.PROGRESSIVE_STAGE: float(state.stage)}


def promoted_this_generation(state: CampaignState) -> bool:
    """A promotion finished in the current generation (its publication is done)."""
    last = state.promotion.get("last")
    promoting = state.candidate is not None and state.candidate.promoting is not None
    return promoting or (last is not None and last["generation"] == state.generation)


__all__ = ["due_quanta", "judge_candidate", "plateaued", "promoted_this_generation", "sizes", "stage_ratings",
           "start_candidate", "start_reason", "train_candidate"]
