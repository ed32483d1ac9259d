"""The from-to policy head with its query and key projections folded together.

SPEC 4's head scores square pairs with ``q_i . k_j / sqrt(d)`` where
``q = t Wq^T + bq`` and ``k = t Wk^T + bk`` are two ``d x d`` projections of
the per-square tokens ``t``.  Expanding the product,

    q_i . k_j = (t_i Wq^T Wk + bq Wk) . t_j + (t_i . Wq^T bk + bq . bk)

so one ``d x d`` projection of the tokens (``left``) dotted with the tokens
themselves, plus a per-origin-square term (``row``), gives the same scores
with half the projection work.  The promotion offsets read the key of the
destination square through ``Linear(d -> 4, no bias)``; they become one
``Linear(d -> 4)`` of the tokens (``promotion``).  Token-level layers run on
``[N * 64, features]`` matrices so ONNX Runtime executes them as ``Gemm``
with the bias fused.

:func:`fold_policy_head` builds it from a
:class:`~chesszero.model.heads.FromToPolicyHead` (read only, float64
arithmetic); outputs agree to float rounding.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from chesszero.model.actions import PROMOTION_PIECES
from chesszero.model.heads import FromToPolicyHead

__all__ = ["FoldedPolicyHead", "fold_policy_head"]


def _linear(weight: torch.Tensor, bias: torch.Tensor) -> nn.Linear:
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        layer.weight.copy_(weight.float())
        layer.bias.copy_(bias.float())
    return layer


class FoldedPolicyHead(nn.Module):
    """Deployment form of the from-to policy head (see the module docstring)."""

    def __init__(self, token: nn.Linear, left: nn.Linear, row: nn.Linear, promotion: nn.Linear,
                 head: FromToPolicyHead) -> None:
        super().__init__()
        self.token, self.left, self.row, self.promotion = token, left, row, promotion
        for name in ("promo_piece", "promo_knight"):
            self.register_buffer(name, getattr(head, name).clone(), persistent=False)
        # One gather for every action: the 4,096 square-pair scores are followed
        # by one score per promotion offset (its square pair's score plus the
        # offset), and each action reads its own column of that row.
        slots = head.promo_piece.numel()
        promotion = torch.nonzero(head.promo_slot < slots).flatten()
        if not torch.equal(torch.sort(head.promo_slot[promotion]).values, torch.arange(slots, device=promotion.device)):
            raise ValueError("the action table's promotion slots do not map one action to each offset")
        pair_of_slot = torch.empty(slots, dtype=torch.long)
        pair_of_slot[head.promo_slot[promotion]] = head.from_to[promotion]
        column = head.from_to.clone()
        column[promotion] = 64 * 64 + head.promo_slot[promotion]
        self.register_buffer("pair_of_slot", pair_of_slot.to(head.from_to.device), persistent=False)
        self.register_buffer("column", column, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, channels = x.shape[0], x.shape[1]
        flat = x.flatten(2).transpose(1, 2).reshape(n * 64, channels)
        tokens = F.gelu(self.token(flat))  # [N * 64, d]
        left = self.left(tokens).reshape(n, 64, -1)
        scores = torch.matmul(left, tokens.reshape(n, 64, -1).transpose(1, 2))
        scores = (scores + self.row(tokens).reshape(n, 64, 1)).reshape(n, 64 * 64)
        u = self.promotion(tokens).reshape(n, 64 * len(PROMOTION_PIECES))
        offsets = u.index_select(1, self.promo_piece) - u.index_select(1, self.promo_knight)
        promoted = scores.index_select(1, self.pair_of_slot) + offsets
        return torch.cat([scores, promoted], dim=1).index_select(1, self.column)


@torch.no_grad()
def fold_policy_head(head: FromToPolicyHead) -> FoldedPolicyHead:
    """The folded equivalent of ``head`` (a new module; ``head`` is not modified)."""
    if not isinstance(head.act, nn.GELU) or head.act.approximate != "none":
        raise ValueError("fold_policy_head expects the exact-GELU from-to head of SPEC 4")
    s = 1.0 / math.sqrt(head.dim)
    wq, bq = head.query.weight.double(), head.query.bias.double()
    wk, bk = head.key.weight.double(), head.key.bias.double()
    wp = head.promotion.weight.double()
    token = _linear(head.token.weight, head.token.bias)
    left = _linear((wq.T @ wk).T * s, (bq @ wk) * s)
    row = _linear((wq.T @ bk)[None, :] * s, (bq @ bk)[None] * s)
    promotion = _linear(wp @ wk, wp @ bk)
    return FoldedPolicyHead(token, left, row, promotion, head).to(head.token.weight.device)
