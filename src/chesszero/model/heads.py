"""Network heads of SPEC 4: from-to policy, WDL value and remaining length.

All heads read the trunk output ``[N, C, 8, 8]``.

- :class:`FromToPolicyHead` scores every (from, to) square pair with a scaled
  query-key product and gathers the 1,880 action logits, adding learned
  promotion offsets for under-promotions.  The training-only next-policy head
  is a second instance of the same class.
- :class:`WdlHead` gives win/draw/loss logits for the side to move.
- :class:`LengthHead` predicts remaining game length (scaled by 1/400).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from chesszero.model.actions import PROMOTION_PIECES, ActionTable

__all__ = ["FINAL_INIT_STD", "POLICY_DIM", "VALUE_HIDDEN", "FromToPolicyHead", "LengthHead", "WdlHead"]

POLICY_DIM = 128
"""Token, query and key width of the from-to policy head."""
VALUE_HIDDEN = 48
"""Hidden width of the WDL head."""
FINAL_INIT_STD = 0.01
"""Initial weight std of the final policy layers (query, promotion offsets) and the
final value layer (SPEC 4)."""


def _init_small(layer: nn.Linear) -> None:
    nn.init.normal_(layer.weight, mean=0.0, std=FINAL_INIT_STD)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)


class FromToPolicyHead(nn.Module):
    """Query-key from-to policy head producing one logit per action.

    Per square: ``Linear(C -> 128) -> GELU`` gives a token; ``query`` and
    ``key`` projections (128 -> 128) give ``Q K^T / sqrt(128)`` over the
    64 x 64 square pairs.  Action ``a`` reads ``score(from_a, to_a)``;
    a promotion action additionally gets ``u_piece(key_to) - u_knight(key_to)``
    with ``u = Linear(128 -> 4, no bias)`` over (queen, rook, bishop, knight).
    """

    def __init__(self, channels: int, table: ActionTable, dim: int = POLICY_DIM) -> None:
        super().__init__()
        self.dim = dim
        self.token = nn.Linear(channels, dim)
        self.act = nn.GELU()
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.promotion = nn.Linear(dim, len(PROMOTION_PIECES), bias=False)
        # Scores are linear in the query, so a small query alone starts the policy
        # near uniform; keeping the key at its default scale avoids the stalled
        # start of a bilinear form with both factors near zero.
        for layer in (self.query, self.promotion):
            _init_small(layer)
        piece_index, knight_index, slot = table.promotion_gather()
        self.register_buffer("from_to", torch.from_numpy(table.from_to_index()), persistent=False)
        self.register_buffer("promo_piece", torch.from_numpy(piece_index), persistent=False)
        self.register_buffer("promo_knight", torch.from_numpy(knight_index), persistent=False)
        self.register_buffer("promo_slot", torch.from_numpy(slot), persistent=False)
        self.num_actions = len(table)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        tokens = self.act(self.token(x.flatten(2).transpose(1, 2)))  # [N, 64, dim]
        q = self.query(tokens)
        k = self.key(tokens)
        scores = torch.matmul(q, k.transpose(1, 2)) * (1.0 / math.sqrt(self.dim))
        logits = scores.reshape(n, 64 * 64).index_select(1, self.from_to)
        u = self.promotion(k).reshape(n, 64 * len(PROMOTION_PIECES))
        offsets = u.index_select(1, self.promo_piece) - u.index_select(1, self.promo_knight)
        offsets = torch.cat([offsets, offsets.new_zeros(n, 1)], dim=1)
        return logits + offsets.index_select(1, self.promo_slot)


class WdlHead(nn.Module):
    """``conv1x1(C -> 2) -> BN -> ReLU -> flatten(128) -> Linear(128 -> 48) -> ReLU -> Linear(48 -> 3)``."""

    def __init__(self, channels: int, hidden: int = VALUE_HIDDEN) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 2, kernel_size=1, bias=False)
        self.bn = nn.BatchNorm2d(2)
        self.fc1 = nn.Linear(2 * 64, hidden)
        self.fc2 = nn.Linear(hidden, 3)
        _init_small(self.fc2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn(self.conv(x))).flatten(1)
        return self.fc2(torch.relu(self.fc1(h)))


class LengthHead(nn.Module):
    """``conv1x1(C -> 1) -> BN -> ReLU -> flatten(64) -> Linear(64 -> 1)``; returns ``[N]``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, kernel_size=1, bias=False)
        self.bn = nn.BatchNorm2d(1)
        self.fc = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn(self.conv(x))).flatten(1)
        return self.fc(h).squeeze(1)
