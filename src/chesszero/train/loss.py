"""The masked multi-head loss of SPEC 5.

``loss = w_p * CE(pi, p) + w_v * CE(z', v) + w_n * CE(pi_next, p_next) + w_l * smoothL1(len)``

- policy: cross-entropy of the sparse search policy against the softmax over
  legal actions only (illegal logits are masked before the softmax);
- value: cross-entropy of the blended W/D/L target against the WDL softmax;
- next policy: cross-entropy against the softmax over all actions (the next
  position's legal set is not stored), only on rows with ``next_mask``;
- length: smooth-L1 against ``plies_remaining / 400``, only on rows with
  ``length_mask``.

Every head is averaged over all ``N`` rows of the batch with each row weighted
1.0; a missing label contributes exactly zero (not a re-weighted mean), so
per-rank losses average to the global-batch loss under DDP.

Beyond SPEC 5 (issue 22), a row whose position has a checkmating or a
stalemating move may weigh more in the policy term (``LossWeights.mate_rows``,
``stalemate_rows``; the larger of the two when both apply). The sum is still
divided by ``N``, so ordinary rows keep their gradient and the default weights
of 1 give SPEC 5's loss bit for bit. The ``policy`` term reported stays the
unweighted one (comparable across recipes); only ``total`` is weighted.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from chesszero.config.schema import LossWeights
from chesszero.model.network import NetOutput
from chesszero.replay.layout import ENDING_MATE, ENDING_STALEMATE
from chesszero.train.batch import TrainBatch

__all__ = ["ILLEGAL_LOGIT", "LossTerms", "compute_loss", "ending_row_weights", "sparse_cross_entropy"]

ILLEGAL_LOGIT = -1.0e9
"""Value given to illegal logits before the softmax (finite: no 0 * inf NaNs)."""


@dataclass(frozen=True)
class LossTerms:
    """Weighted total and the unweighted per-head terms (all scalar tensors)."""

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    next_policy: torch.Tensor
    length: torch.Tensor

    def detached(self) -> torch.Tensor:
        """The five values stacked as a float32 tensor ``[5]`` (for statistics)."""
        return torch.stack(
            [self.total, self.policy, self.value, self.next_policy, self.length]
        ).detach().float()


def sparse_cross_entropy(
    logits: torch.Tensor, ids: torch.Tensor, probs: torch.Tensor, legal: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-row ``-sum_k probs[k] * log softmax(logits)[ids[k]]`` ``[N]``.

    With ``legal`` (bool ``[N, A]``) the softmax runs over legal actions only.
    """
    logits = logits.float()
    if legal is not None:
        logits = logits.masked_fill(~legal, ILLEGAL_LOGIT)
    log_p = torch.log_softmax(logits, dim=1)
    return -(probs * log_p.gather(1, ids)).sum(dim=1)


def ending_row_weights(endings: torch.Tensor, weights: LossWeights) -> torch.Tensor:
    """Per-row policy weights ``[N]`` from the rows' ``endings`` bits: 1, or
    ``mate_rows`` / ``stalemate_rows`` where the position has such a move (the
    larger where it has both; rows whose bits were never computed weigh 1)."""
    bits = endings.to(torch.int32)
    mate, stale = (bits & ENDING_MATE) != 0, (bits & ENDING_STALEMATE) != 0
    w = torch.ones(bits.shape, dtype=torch.float32, device=bits.device)
    w_mate, w_stale = torch.full_like(w, weights.mate_rows), torch.full_like(w, weights.stalemate_rows)
    w = torch.where(mate, w_mate, w)
    w = torch.where(stale, w_stale, w)
    return torch.where(mate & stale, torch.maximum(w_mate, w_stale), w)


def compute_loss(out: NetOutput, batch: TrainBatch, weights: LossWeights) -> LossTerms:
    """The SPEC 5 loss of one batch; requires a network with auxiliary heads."""
    if out.next_policy is None or out.length is None:
        raise ValueError("compute_loss needs the training heads (ChessNet(aux_heads=True))")
    n = len(batch)
    policy = sparse_cross_entropy(out.policy, batch.policy_ids, batch.policy_probs, batch.legal)
    trained_policy = policy.sum() / n
    if weights.mate_rows != 1.0 or weights.stalemate_rows != 1.0:
        trained_policy = (policy * ending_row_weights(batch.endings, weights)).sum() / n
    value = -(batch.wdl * torch.log_softmax(out.wdl.float(), dim=1)).sum(dim=1)
    next_ce = sparse_cross_entropy(out.next_policy, batch.next_ids, batch.next_probs)
    next_policy = torch.where(batch.next_mask, next_ce, torch.zeros_like(next_ce))
    length_err = F.smooth_l1_loss(out.length.float(), batch.length, reduction="none")
    length = torch.where(batch.length_mask, length_err, torch.zeros_like(length_err))
    terms = [t.sum() / n for t in (policy, value, next_policy, length)]
    total = (
        weights.policy * trained_policy
        + weights.value * terms[1]
        + weights.next_policy * terms[2]
        + weights.length * terms[3]
    )
    return LossTerms(total, *terms)
