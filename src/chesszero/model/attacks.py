"""Attacked-square planes computed inside the network (issue 22; not in SPEC 2 or 4).

SPEC 2's 52 planes show where the pieces stand, not which squares they
control; a small network has to learn sliding attacks, blocked by whatever
stands in the way, from scratch, and stalemates show it has not: it takes
the opponent king's last squares away without seeing that no legal move
is left.  :class:`AttackPlanes` computes two planes from the piece planes
with fixed (untrained) convolutions, so the encoding contract, the replay
rows, the web encoder and the network's input stay as they are:

- plane 0: squares the side to move attacks, plane 1: squares the opponent
  attacks (pawn captures, knight and king steps, sliding rays up to and
  including the first occupied square), 1 or 0.  Binary, not counts: with
  attacker counts a briefly trained 2x16 network fell below the fidelity
  gate's top-1 agreement (0.945);
- the *enemy king is transparent* to each side's rays, so a square behind
  the king on a checking line counts as attacked: the king's flight squares
  are exactly its neighbours that are not attacked and not occupied by its
  own pieces.

Sliding rays use the occluded (Kogge-Stone) fill for all eight directions of
both sides at once: a grouped 3x3 convolution of dilation ``k`` shifts each
direction's plane by ``k`` squares, and three rounds (``k`` = 1, 2, 4) cover a
ray of seven; a depthwise 5x5 convolution gives the pawn, knight and king
steps, a 1x1 convolution adds up each side's channels and a clip makes the
counts binary.  Every value is a small non-negative integer, so the planes
are exact in float32 and in any runtime that runs the exported graph.  On
ONNX Runtime (one thread, AVX-512) they cost about 14 us a position alone
at batch 4 or 256; a first form whose last step was one dense 5x5
convolution over all 52 planes cost 85 us (ONNX Runtime's blocked layout
for 2 output channels), and one built from gathers and matrix products 46.
Networks with them are sizes ``"BxC-at"`` (recipe key ``model.attack_planes``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ATTACK_PLANES", "AttackPlanes"]

ATTACK_PLANES = 2
"""Planes :class:`AttackPlanes` adds: squares attacked by the side to move, by the opponent."""

_RAYS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
"""SPEC 3's ray order (row, column): even entries orthogonal, odd diagonal."""
_KNIGHT = ((2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1))
_KING = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc)
_PAWN, _KNIGHT_PLANE, _BISHOP, _ROOK, _QUEEN, _KING_PLANE = range(6)
_SIDE = 6
"""Planes 0-5 are the side to move's P, N, B, R, Q, K; 6-11 the opponent's."""
_CHANNELS = 2 * len(_RAYS)
"""Slider channels: side ``s`` (0 own, 1 opponent), ray ``d`` at ``8 * s + d``."""


def _shift_kernel(dr: int, dc: int, size: int) -> torch.Tensor:
    """A ``size`` x ``size`` kernel whose cross-correlation moves a plane by ``(dr, dc)``."""
    kernel = torch.zeros(size, size)
    centre = size // 2
    kernel[centre - dr, centre - dc] = 1.0
    return kernel


def _leaper_weight() -> torch.Tensor:
    """Depthwise ``[12, 1, 5, 5]``: each piece plane's pawn-capture, knight or king steps (none for sliders)."""
    weight = torch.zeros(2 * _SIDE, 1, 5, 5)
    for side, forward in ((0, 1), (1, -1)):
        base = _SIDE * side
        for dc in (-1, 1):
            weight[base + _PAWN, 0] += _shift_kernel(forward, dc, 5)
        for dr, dc in _KNIGHT:
            weight[base + _KNIGHT_PLANE, 0] += _shift_kernel(dr, dc, 5)
        for dr, dc in _KING:
            weight[base + _KING_PLANE, 0] += _shift_kernel(dr, dc, 5)
    return weight


def _ray_start_weights() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """1x1 weights ``[16, 12]`` picking each channel's sliders and empty squares, and the empties' bias."""
    sliders = torch.zeros(_CHANNELS, 2 * _SIDE, 1, 1)
    empty = torch.full((_CHANNELS, 2 * _SIDE, 1, 1), -1.0)
    for side in (0, 1):
        base, enemy = _SIDE * side, _SIDE * (1 - side)
        for d in range(len(_RAYS)):
            c = len(_RAYS) * side + d
            sliders[c, base + (_ROOK if d % 2 == 0 else _BISHOP), 0, 0] = 1.0
            sliders[c, base + _QUEEN, 0, 0] = 1.0
            empty[c, enemy + _KING_PLANE, 0, 0] = 0.0  # the enemy king does not block
    return sliders, empty, torch.ones(_CHANNELS)


def _side_sum_weight() -> torch.Tensor:
    """1x1 ``[2, 16 + 12]`` over ``cat(rays, leaps)``: each side's rays and piece steps."""
    weight = torch.zeros(2, _CHANNELS + 2 * _SIDE, 1, 1)
    for side in (0, 1):
        weight[side, len(_RAYS) * side : len(_RAYS) * (side + 1)] = 1.0
        weight[side, _CHANNELS + _SIDE * side : _CHANNELS + _SIDE * (side + 1)] = 1.0
    return weight


def _ray_shift_weight() -> torch.Tensor:
    """``[16, 1, 3, 3]``: channel ``8 * s + d`` moves one step along ray ``d`` (dilation scales it)."""
    return torch.stack([_shift_kernel(dr, dc, 3) for _ in range(2) for dr, dc in _RAYS])[:, None]


class AttackPlanes(nn.Module):
    """``planes [N, >=12, 8, 8] -> [N, 2, 8, 8]``: squares attacked by each side, 1 or 0 (module docstring).

    Fixed weights only: nothing is trained and nothing enters the state dict,
    so a checkpoint's keys do not depend on whether the network has them.
    """

    def __init__(self) -> None:
        super().__init__()
        sliders, empty, empty_bias = _ray_start_weights()
        self.register_buffer("sliders", sliders, persistent=False)
        self.register_buffer("empty", empty, persistent=False)
        self.register_buffer("empty_bias", empty_bias, persistent=False)
        self.register_buffer("ray_shift", _ray_shift_weight(), persistent=False)
        self.register_buffer("leapers", _leaper_weight(), persistent=False)
        self.register_buffer("side_sum", _side_sum_weight(), persistent=False)

    def _shift(self, x: torch.Tensor, step: int) -> torch.Tensor:
        return F.conv2d(x, self.ray_shift, padding=step, dilation=step, groups=_CHANNELS)

    def forward(self, planes: torch.Tensor) -> torch.Tensor:
        pieces = planes[:, : 2 * _SIDE]
        gen = F.conv2d(pieces, self.sliders)
        free = F.conv2d(pieces, self.empty, self.empty_bias)
        for step in (1, 2, 4):  # occluded fill: each ray's sliders spread over empty squares
            gen = torch.maximum(gen, free * self._shift(gen, step))
            if step != 4:
                free = free * self._shift(free, step)
        leaps = F.conv2d(pieces, self.leapers, padding=2, groups=2 * _SIDE)
        counts = F.conv2d(torch.cat([self._shift(gen, 1), leaps], dim=1), self.side_sum)
        return torch.clamp(counts, max=1.0)
