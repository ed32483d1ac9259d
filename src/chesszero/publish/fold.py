"""Folding a training network into its deployment copy (SPEC 9, paper 4.3.6).

:func:`fold_network` reads a :class:`~chesszero.model.ChessNet` (in any
mode; it is never modified) and returns a new
:class:`~chesszero.publish.deploy_net.DeployNet` in eval mode:

- every ``conv -> BatchNorm`` pair becomes one convolution with a bias,
  ``w' = w * gamma / sqrt(var + eps)``, ``b' = beta - mean * gamma / sqrt(var + eps)``,
  using the BatchNorm *running* statistics;
- the second convolution of each residual block additionally absorbs the
  branch scale ``1/sqrt(B)`` (``w'' = s w'``, ``b'' = s b'``);
- with ``int8_stem``, the stem's weights are rewritten for the deployment
  network's scaled input (:func:`~chesszero.publish.deploy_net.stem_weights`);
- a squeeze-and-excitation gate (sizes ``"BxC-seR"``) stays float, its
  first layer divided by the branch scale it now reads through;
- the policy head's query and key projections are folded into one
  (:mod:`~chesszero.publish.policy_fold`), its token layers run as matrices;
- the training-only next-policy head is dropped, and so is the length head
  unless ``moves_left`` keeps it (for the search's moves-left utility, its
  BatchNorm folded like the value head's); the heads' Linear layers are deep
  copies.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from chesszero.model.network import ChessNet, GlobalPoolingBlock, ResidualBlock
from chesszero.publish.deploy_net import (
    DeployConv,
    DeployLengthHead,
    DeployNet,
    DeployPoolingBlock,
    DeployResidualBlock,
    DeploySqueezeExcite,
    DeployWdlHead,
    stem_weights,
)
from chesszero.publish.policy_fold import fold_policy_head

__all__ = ["fold_conv_bn", "fold_network"]


@torch.no_grad()
def fold_conv_bn(
    conv: nn.Conv2d, bn: nn.BatchNorm2d, *, scale: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weight and bias of ``scale * bn(conv(x))`` as a single convolution (float32 copies)."""
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("BatchNorm without running statistics cannot be folded")
    inv_std = torch.rsqrt(bn.running_var.double() + bn.eps)
    gamma = bn.weight.double() if bn.weight is not None else torch.ones_like(inv_std)
    beta = bn.bias.double() if bn.bias is not None else torch.zeros_like(inv_std)
    factor = gamma * inv_std * scale
    weight = conv.weight.double() * factor[:, None, None, None]
    bias = (beta - bn.running_mean.double() * gamma * inv_std) * scale
    if conv.bias is not None:
        bias = bias + conv.bias.double() * factor
    return weight.float(), bias.float()


def _conv(conv: nn.Conv2d, bn: nn.BatchNorm2d, *, scale: float = 1.0, quantizable: bool) -> DeployConv:
    weight, bias = fold_conv_bn(conv, bn, scale=scale)
    return DeployConv(weight, bias, quantizable=quantizable)


def _stem(net: ChessNet, *, int8_stem: bool) -> DeployConv:
    weight, bias = fold_conv_bn(net.stem_conv, net.stem_bn)
    if not int8_stem:
        return DeployConv(weight, bias, quantizable=False)
    return DeployConv(stem_weights(weight), bias, quantizable=True)


@torch.no_grad()
def _fold_se(block: ResidualBlock | GlobalPoolingBlock) -> DeploySqueezeExcite | None:
    if block.se is None:
        return None
    fc1 = copy.deepcopy(block.se.fc1)
    fc1.weight.div_(block.branch_scale)  # it reads bn2's output times the scale once folded
    return DeploySqueezeExcite(fc1, copy.deepcopy(block.se.fc2))


def _fold_block(block: nn.Module, *, last: bool) -> DeployResidualBlock | DeployPoolingBlock:
    if isinstance(block, GlobalPoolingBlock):
        return DeployPoolingBlock(
            _conv(block.conv1, block.bn1, quantizable=True),
            copy.deepcopy(block.pool_fc),
            _conv(block.conv2, block.bn2, scale=block.branch_scale, quantizable=True),
            block.pooled,
            quantize_output=not last,
            se=_fold_se(block),
        )
    if isinstance(block, ResidualBlock):
        return DeployResidualBlock(
            _conv(block.conv1, block.bn1, quantizable=True),
            _conv(block.conv2, block.bn2, scale=block.branch_scale, quantizable=True),
            quantize_output=not last,
            se=_fold_se(block),
        )
    raise TypeError(f"cannot fold unknown block type {type(block).__name__}")


def fold_network(net: ChessNet, *, int8_stem: bool = False, moves_left: bool = False) -> DeployNet:
    """The deployment copy of ``net`` (float, eval mode, on ``net``'s device).

    ``net`` is only read: its parameters, buffers, mode and heads are left
    exactly as they were.  ``int8_stem`` makes the stem an INT8 convolution
    once quantised (``publish.int8_stem``; SPEC 9 keeps it float).
    ``moves_left`` keeps the remaining-length head (float, BatchNorm folded)
    as a third output in plies, for the search's moves-left utility
    (``search.moves_left.slope``); ``ValueError`` when ``net`` has none.
    """
    if not isinstance(net, ChessNet):
        raise TypeError(f"fold_network needs a ChessNet, got {type(net).__name__}")
    length = net.require_length_head("moves_left") if moves_left else None
    head = net.value_head
    deploy = DeployNet(
        net.size,
        _stem(net, int8_stem=int8_stem),
        [_fold_block(block, last=i == len(net.blocks) - 1) for i, block in enumerate(net.blocks)],
        fold_policy_head(net.policy_head),
        DeployWdlHead(
            _conv(head.conv, head.bn, quantizable=False),
            copy.deepcopy(head.fc1),
            copy.deepcopy(head.fc2),
        ),
        int8_stem=int8_stem,
        length_head=DeployLengthHead(_conv(length.conv, length.bn, quantizable=False), copy.deepcopy(length.fc))
        if length is not None
        else None,
    )
    device = net.stem_conv.weight.device
    return deploy.to(device).eval().requires_grad_(False)
