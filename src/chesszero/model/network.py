"""The chesszero network (SPEC 4): capped, scaled residual CNN with global pooling.

- :class:`ResidualBlock` / :class:`GlobalPoolingBlock`: post-activation blocks
  whose branch is multiplied by ``1/sqrt(B)`` before the residual add; every
  activation in the trunk is ReLU6; convolutions carry no bias.
- :class:`SqueezeExcite`: an optional channel gate on each block's branch
  (sizes ``"BxC-seR"``; issue 22, not in SPEC 4).
- :class:`ChessNet`: [attacked-square planes (sizes ``"BxC-at"``,
  :mod:`chesszero.model.attacks`) +] stem + ``B`` blocks (block ``i`` pools when ``i % 2 == 1``)
  + policy and WDL heads, plus the training-only next-policy and
  remaining-length heads.  ``forward`` returns a :class:`NetOutput`.
- :class:`InferenceNet`: a view sharing the same modules that returns only
  ``(policy_logits [N, 1880], wdl_logits [N, 3])`` (for evaluators and export).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from chesszero import core
from chesszero.config.sizes import ModelSize, parse_size
from chesszero.model.actions import ActionTable, core_action_table
from chesszero.model.attacks import ATTACK_PLANES, AttackPlanes
from chesszero.model.heads import FromToPolicyHead, LengthHead, WdlHead

__all__ = [
    "INPUT_PLANES",
    "ChessNet",
    "GlobalPoolingBlock",
    "InferenceNet",
    "NetOutput",
    "ResidualBlock",
    "SqueezeExcite",
    "count_parameters",
    "stem_planes",
]

INPUT_PLANES = int(core.NUM_PLANES)
"""Input planes per position (SPEC 2: 52), read from the core that owns the encoding."""


def _conv3x3(cin: int, cout: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False)


class NetOutput(NamedTuple):
    """Raw network outputs; auxiliary entries are ``None`` without training heads."""

    policy: torch.Tensor
    """Policy logits ``[N, 1880]`` (unmasked)."""
    wdl: torch.Tensor
    """Win/draw/loss logits ``[N, 3]`` for the side to move."""
    next_policy: torch.Tensor | None
    """Next searched policy logits ``[N, 1880]`` (training only)."""
    length: torch.Tensor | None
    """Remaining plies / 400 ``[N]`` (training only)."""


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation gate (Hu et al., 2018) on a block's branch.

    ``y * sigmoid(fc2(relu(fc1(mean_board(y)))))``: the board mean of each
    channel, through a ``C -> hidden -> C`` bottleneck, scales that channel
    by a factor in (0, 1). A gate only, without Lc0's extra per-channel bias:
    the global-pooling blocks already add a board-wide bias.
    """

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, channels)

    def gate(self, y: torch.Tensor) -> torch.Tensor:
        """Per-channel factors ``[N, C]`` in (0, 1)."""
        return torch.sigmoid(self.fc2(F.relu(self.fc1(y.mean(dim=(2, 3))))))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y * self.gate(y)[:, :, None, None]


def _squeeze_excite(channels: int, se_hidden: int) -> SqueezeExcite | None:
    return SqueezeExcite(channels, se_hidden) if se_hidden > 0 else None


class ResidualBlock(nn.Module):
    """conv3x3 -> BN -> ReLU6 -> conv3x3 -> BN [-> SE] -> ``* scale`` -> ``+ x`` -> ReLU6."""

    def __init__(self, channels: int, branch_scale: float, se_hidden: int = 0) -> None:
        super().__init__()
        self.branch_scale = branch_scale
        self.conv1 = _conv3x3(channels, channels)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = _conv3x3(channels, channels)
        self.bn2 = nn.BatchNorm2d(channels)
        self.se = _squeeze_excite(channels, se_hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu6(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.se is not None:
            y = self.se(y)
        return F.relu6(x + y * self.branch_scale)


class GlobalPoolingBlock(nn.Module):
    """Residual block whose middle features get board-wide context.

    After conv3x3 -> BN -> ReLU6, the first ``C/4`` channels are pooled
    (mean and max over the board), projected by ``Linear(2*C/4 -> 3C/4)`` and
    added as a per-channel bias to the other ``3C/4`` channels, which feed
    conv3x3(3C/4 -> C) -> BN [-> SE] -> ``* scale`` -> ``+ x`` -> ReLU6.
    """

    def __init__(self, channels: int, branch_scale: float, se_hidden: int = 0) -> None:
        super().__init__()
        self.branch_scale = branch_scale
        self.pooled = channels // 4
        rest = channels - self.pooled
        self.conv1 = _conv3x3(channels, channels)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pool_fc = nn.Linear(2 * self.pooled, rest)
        self.conv2 = _conv3x3(rest, channels)
        self.bn2 = nn.BatchNorm2d(channels)
        self.se = _squeeze_excite(channels, se_hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu6(self.bn1(self.conv1(x)))
        g, r = y[:, : self.pooled], y[:, self.pooled :]
        pooled = torch.cat([g.mean(dim=(2, 3)), g.amax(dim=(2, 3))], dim=1)
        r = r + self.pool_fc(pooled)[:, :, None, None]
        y = self.bn2(self.conv2(r))
        if self.se is not None:
            y = self.se(y)
        return F.relu6(x + y * self.branch_scale)


class ChessNet(nn.Module):
    """The training network: trunk, policy and WDL heads, optional auxiliary heads.

    ``size`` is a ladder name or any ``"BxC"`` (``"BxC-seR"``: squeeze-and-excitation); ``table`` defaults to the native
    core's action table.  With ``aux_heads=False`` the next-policy and length
    heads are omitted (a lighter inference-only model with the same state-dict
    keys for the shared parts).
    """

    def __init__(
        self,
        size: str | ModelSize,
        *,
        table: ActionTable | None = None,
        aux_heads: bool = True,
    ) -> None:
        super().__init__()
        self.size = parse_size(size)
        table = core_action_table() if table is None else table
        channels, blocks = self.size.channels, self.size.blocks
        scale = 1.0 / math.sqrt(blocks)
        self.attacks = AttackPlanes() if self.size.attacks else None
        self.stem_conv = _conv3x3(stem_planes(self.size), channels)
        self.stem_bn = nn.BatchNorm2d(channels)
        self.blocks = nn.ModuleList(
            GlobalPoolingBlock(channels, scale, self.size.se_hidden)
            if i % 2 == 1
            else ResidualBlock(channels, scale, self.size.se_hidden)
            for i in range(blocks)
        )
        self.policy_head = FromToPolicyHead(channels, table)
        self.value_head = WdlHead(channels)
        self.next_policy_head: FromToPolicyHead | None = None
        self.length_head: LengthHead | None = None
        if aux_heads:
            self.next_policy_head = FromToPolicyHead(channels, table)
            self.length_head = LengthHead(channels)

    @property
    def has_aux_heads(self) -> bool:
        """Whether the training-only heads are present."""
        return self.next_policy_head is not None

    def require_length_head(self, what: str) -> LengthHead:
        """The remaining-length head; ValueError naming ``what`` needs it when the network has none."""
        if self.length_head is None:
            raise ValueError(f"{what} needs a network with its remaining-length head (ChessNet(aux_heads=True))")
        return self.length_head

    def stem_input(self, planes: torch.Tensor) -> torch.Tensor:
        """The stem's input: the planes, with the attack planes appended for ``-at`` sizes."""
        return planes if self.attacks is None else torch.cat([planes, self.attacks(planes)], dim=1)

    def trunk(self, planes: torch.Tensor) -> torch.Tensor:
        """Shared features ``[N, C, 8, 8]`` from input planes ``[N, 52, 8, 8]``."""
        x = F.relu6(self.stem_bn(self.stem_conv(self.stem_input(planes))))
        for block in self.blocks:
            x = block(x)
        return x

    def forward(self, planes: torch.Tensor) -> NetOutput:
        x = self.trunk(planes)
        next_policy = self.next_policy_head(x) if self.next_policy_head is not None else None
        length = self.length_head(x) if self.length_head is not None else None
        return NetOutput(self.policy_head(x), self.value_head(x), next_policy, length)

    def inference_view(self) -> InferenceNet:
        """A module sharing this network's weights that returns ``(policy, wdl)`` logits."""
        return InferenceNet(self)


class InferenceNet(nn.Module):
    """Inference view: ``planes [N, 52, 8, 8] -> (policy_logits [N, 1880], wdl_logits [N, 3])``.

    Shares parameters with the wrapped :class:`ChessNet` and never runs the
    training-only heads.
    """

    def __init__(self, net: ChessNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.net.trunk(planes)
        return self.net.policy_head(x), self.net.value_head(x)


def stem_planes(size: ModelSize) -> int:
    """Planes the stem convolution reads: SPEC 2's 52, plus the attack planes for ``-at`` sizes."""
    return INPUT_PLANES + (ATTACK_PLANES if size.attacks else 0)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters (BatchNorm running statistics excluded)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
