"""The NNUE student in PyTorch (docs/nnue.md section 2), trained on the CPU.

``NnueModel(hidden)``: one shared ``W1 [768, N]`` and ``b1 [N]`` summed over
the active features of each perspective (an ``embedding_bag`` over the
padded index arrays, -1 padding), side to move's accumulator first, SCReLU
(``clamp(x, 0, 1)^2``), then ``W2 [2N]`` and ``b2``: ``forward`` returns
``y``, and ``400 * y`` is the evaluation in centipawns from the side to
move's view. ``clip_()`` puts every weight back into the range the integer
engine can hold (section 3); the trainer calls it after every optimizer
step, so the float network is always exportable.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from chesszero.nnue.quant import B2_RANGE, INPUTS, MAX_ACTIVE, W_RANGE, FloatNet

__all__ = ["NnueModel", "screlu"]


def screlu(x: torch.Tensor) -> torch.Tensor:
    """Squared clipped ReLU: ``clamp(x, 0, 1)^2``."""
    return torch.clamp(x, 0.0, 1.0).square()


class NnueModel(nn.Module):
    """768 -> N x 2 (shared weights) -> SCReLU -> 1 (module docstring)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        if hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {hidden}")
        self.hidden = hidden
        a = 1.0 / math.sqrt(MAX_ACTIVE)  # a full board's accumulator starts with std ~0.6
        self.w1 = nn.Parameter(torch.empty(INPUTS, hidden).uniform_(-a, a))
        self.b1 = nn.Parameter(torch.zeros(hidden))
        b = 1.0 / math.sqrt(2 * hidden)
        self.w2 = nn.Parameter(torch.empty(2 * hidden).uniform_(-b, b))
        self.b2 = nn.Parameter(torch.zeros(()))

    def accumulate(self, features: torch.Tensor) -> torch.Tensor:
        """``b1 + sum of W1 rows`` of each row's active features (-1 entries are padding): ``[B, N]``."""
        padded = torch.cat([self.w1, self.w1.new_zeros(1, self.hidden)])
        idx = torch.where(features < 0, torch.full_like(features, INPUTS), features)
        return self.b1 + F.embedding_bag(idx, padded, mode="sum", padding_idx=INPUTS)

    def forward(self, stm: torch.Tensor, nstm: torch.Tensor) -> torch.Tensor:
        """``y [B]`` (``400 * y`` is centipawns) from int64 feature indices ``[B, 32]`` per perspective."""
        h = torch.cat([self.accumulate(stm), self.accumulate(nstm)], dim=1)
        return screlu(h) @ self.w2 + self.b2

    @torch.no_grad()
    def clip_(self) -> None:
        """Clamps every weight into its quantisation range (section 3)."""
        for p in (self.w1, self.b1, self.w2):
            p.clamp_(-W_RANGE, W_RANGE)
        self.b2.clamp_(-B2_RANGE, B2_RANGE)

    def to_float_net(self) -> FloatNet:
        """The weights as numpy float64 arrays (what the exporter quantises)."""
        return FloatNet(self.w1.detach().double().numpy().copy(), self.b1.detach().double().numpy().copy(),
                        self.w2.detach().double().numpy().copy(), float(self.b2.detach()))

    @classmethod
    def from_float_net(cls, net: FloatNet) -> NnueModel:
        model = cls(net.hidden)
        with torch.no_grad():
            model.w1.copy_(torch.from_numpy(np.asarray(net.w1, np.float32)))
            model.b1.copy_(torch.from_numpy(np.asarray(net.b1, np.float32)))
            model.w2.copy_(torch.from_numpy(np.asarray(net.w2, np.float32)))
            model.b2.fill_(float(net.b2))
        return model
