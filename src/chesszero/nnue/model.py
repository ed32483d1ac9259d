"""The NNUE student in PyTorch (docs/nnue.md section 2), trained on the CPU.

``NnueModel(hidden)``: one shared ``W1 [768, N]`` and ``b1 [N]`` summed over
the active features of each perspective (an ``embedding_bag`` over the
padded index arrays, -1 padding), side to move's accumulator first, SCReLU
(``clamp(x, 0, 1)^2``), then ``W2 [2N]`` and ``b2``: ``forward`` returns
``y``, and ``400 * y`` is the evaluation in centipawns from the side to
move's view. ``clip_()`` puts every weight back into the range the integer
engine can hold (section 3); the trainer calls it after every optimizer
step, so the float network is always exportable.

Quantisation-aware by construction (``qat``, on by default): the forward pass
uses every weight rounded to its integer grid (W1, b1 at 1/255, W2 at 1/64,
b2 at 1/(255 * 64), half away from zero as the exporter rounds) with a
straight-through gradient, so the function trained is the one the engine
computes; the two then differ only by the engine's integer truncations
(tests/test_nnue_train.py measures it on 1,000 positions).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from chesszero.nnue.quant import B2_RANGE, INPUTS, MAX_ACTIVE, QA, QB, W_RANGE, FloatNet

__all__ = ["NnueModel", "fake_quant", "screlu"]


def fake_quant(x: torch.Tensor, scale: float) -> torch.Tensor:
    """``x`` rounded to the grid ``1/scale`` (half away from zero) in the forward pass,
    the identity in the backward pass (straight-through estimator)."""
    q = torch.sign(x) * torch.floor(torch.abs(x) * scale + 0.5) / scale
    return x + (q - x).detach()


def screlu(x: torch.Tensor) -> torch.Tensor:
    """Squared clipped ReLU: ``clamp(x, 0, 1)^2``."""
    return torch.clamp(x, 0.0, 1.0).square()


class NnueModel(nn.Module):
    """768 -> N x 2 (shared weights) -> SCReLU -> 1 (module docstring)."""

    def __init__(self, hidden: int, *, qat: bool = True) -> None:
        super().__init__()
        if hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {hidden}")
        self.hidden = hidden
        self.qat = qat
        a = 1.0 / math.sqrt(MAX_ACTIVE)  # a full board's accumulator starts with std ~0.6
        self.w1 = nn.Parameter(torch.empty(INPUTS, hidden).uniform_(-a, a))
        self.b1 = nn.Parameter(torch.zeros(hidden))
        b = 1.0 / math.sqrt(2 * hidden)
        self.w2 = nn.Parameter(torch.empty(2 * hidden).uniform_(-b, b))
        self.b2 = nn.Parameter(torch.zeros(()))

    def weights(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(W1, b1, W2, b2) as the forward pass uses them: on the integer grids when ``qat``."""
        if not self.qat:
            return self.w1, self.b1, self.w2, self.b2
        return (fake_quant(self.w1, QA), fake_quant(self.b1, QA), fake_quant(self.w2, QB),
                fake_quant(self.b2, QA * QB))

    def accumulate(self, features: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor) -> torch.Tensor:
        """``b1 + sum of W1 rows`` of each row's active features (-1 entries are padding): ``[B, N]``."""
        padded = torch.cat([w1, w1.new_zeros(1, self.hidden)])
        idx = torch.where(features < 0, torch.full_like(features, INPUTS), features)
        return b1 + F.embedding_bag(idx, padded, mode="sum", padding_idx=INPUTS)

    def forward(self, stm: torch.Tensor, nstm: torch.Tensor) -> torch.Tensor:
        """``y [B]`` (``400 * y`` is centipawns) from int64 feature indices ``[B, 32]`` per perspective."""
        w1, b1, w2, b2 = self.weights()
        h = torch.cat([self.accumulate(stm, w1, b1), self.accumulate(nstm, w1, b1)], dim=1)
        return screlu(h) @ w2 + b2

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
