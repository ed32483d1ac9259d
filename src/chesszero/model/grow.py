"""Function-preserving growth of a :class:`~chesszero.model.ChessNet` (Net2Net).

:func:`grow` returns a network of a larger size (more blocks and/or more
channels) that computes the same outputs as the source in eval mode, so a
bigger candidate can start from a trained smaller network instead of from
scratch (the paper's progressive sizing).

- **Depth.** Blocks keep their indices (so block ``i`` still pools when
  ``i % 2 == 1``) and new blocks are appended.  A block's branch is
  ``bn2(...) * (1/sqrt(B))`` with a fixed, non-learnable scale, so a new
  block starts as an exact identity with its branch-closing BatchNorm's
  scale and shift at zero (its input is a ReLU6 output, which ReLU6 leaves
  unchanged); the old blocks' ``bn2`` scale and shift are multiplied by
  ``sqrt(B'/B)`` to cancel the smaller ``1/sqrt(B')`` scale of the deeper net.
- **Width.** Every widened layer keeps its units and fills the new ones with
  copies of existing units (incoming weights and per-channel BatchNorm
  statistics and affine parameters copied); each consumer's weights from a
  copied unit are split across its replicas.  The split is random but sums to
  the original weight per unit (between 1/4 and 3/4 each for two replicas),
  rather than Net2Net's equal halves: with equal halves the
  replicas would receive identical gradients for ever and the extra width
  would never be used.  In the global-pooling blocks the middle features are
  widened group by group, the pooled first quarter from the old first
  quarter and the other three quarters from the old three quarters, so the
  ``C/4`` / ``3C/4`` split and the pooling projection line up.  The residual
  stream uses one mapping throughout (stem, every block, every head's input).
- Squeeze-and-excitation (sizes ``"BxC-seR"``; source and target must have
  the same ratio): the hidden units are widened like any other, the gate's
  outputs follow the residual stream's mapping, and its first layer is
  divided by the depth factor above, since it reads the enlarged ``bn2``
  output; an appended block's gate multiplies a branch that is zero.
- The heads (policy, WDL, next-policy, length) change only in the layer that
  reads the trunk.

Outputs agree to float rounding (about 1e-6 on the test networks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from chesszero.config.sizes import ModelSize, parse_size
from chesszero.model.actions import ActionTable
from chesszero.model.network import ChessNet

__all__ = ["check_growth", "grow"]

State = dict[str, torch.Tensor]

_SPLIT_LOW, _SPLIT_HIGH = 0.5, 1.5
"""Range of the random weights normalised into a unit's split fractions."""


@dataclass(frozen=True)
class _Widening:
    """Where each of ``len(index)`` new units comes from among ``old`` units."""

    index: torch.Tensor
    """Old unit copied by each new unit (long ``[new]``)."""
    old: int

    def split(self, gen: torch.Generator) -> torch.Tensor:
        """Positive fractions ``[new]`` that sum to 1 over each old unit's replicas.

        A unit that was not copied gets exactly 1.
        """
        raw = torch.empty(len(self.index)).uniform_(_SPLIT_LOW, _SPLIT_HIGH, generator=gen)
        total = torch.zeros(self.old).index_add_(0, self.index, raw)
        return raw / total[self.index]


def _widening(old: int, new: int, gen: torch.Generator) -> _Widening:
    """Keep units ``0..old-1``; new units copy old ones spread evenly (each old
    unit is copied once before any is copied twice), in random order."""
    extra = [torch.randperm(old, generator=gen) for _ in range(-(-(new - old) // old))]
    return _Widening(torch.cat([torch.arange(old), *extra])[:new], old)


def _grouped_widening(old: int, new: int, gen: torch.Generator) -> _Widening:
    """A widening of a global-pooling block's middle features: the pooled first
    quarter from the old first quarter, the rest from the old rest."""
    q_old, q_new = old // 4, new // 4
    pooled = _widening(q_old, q_new, gen)
    rest = _widening(old - q_old, new - q_new, gen)
    return _Widening(torch.cat([pooled.index, rest.index + q_old]), old)


def check_growth(source: str | ModelSize, target: str | ModelSize) -> ModelSize:
    """The parsed target size; ``ValueError`` naming both sizes when it is smaller
    than ``source`` in blocks or in channels."""
    src, dst = parse_size(source), parse_size(target)
    if dst.blocks < src.blocks or dst.channels < src.channels:
        raise ValueError(
            f"cannot grow a {src} network to {dst}: the target has fewer "
            f"{'blocks' if dst.blocks < src.blocks else 'channels'} than the source"
        )
    if dst.se_ratio != src.se_ratio:
        raise ValueError(
            f"cannot grow a {src} network to {dst}: squeeze-and-excitation cannot be added, "
            "removed or resized function-preservingly (give both sizes the same -seR suffix)"
        )
    if dst.attacks != src.attacks:
        raise ValueError(
            f"cannot grow a {src} network to {dst}: attack planes cannot be added or removed "
            "(give both sizes the same -at suffix)"
        )
    return dst


def _bn(out: State, src: State, prefix: str, rows: _Widening, scale: float = 1.0) -> None:
    """Copy a BatchNorm's per-channel statistics and affine parameters to new channels."""
    for name in ("weight", "bias"):
        out[prefix + name] = src[prefix + name][rows.index] * scale
    for name in ("running_mean", "running_var"):
        out[prefix + name] = src[prefix + name][rows.index].clone()
    out[prefix + "num_batches_tracked"] = src[prefix + "num_batches_tracked"].clone()


def _rows_cols(
    weight: torch.Tensor, rows: _Widening | None, cols: _Widening | None, gen: torch.Generator
) -> torch.Tensor:
    """``weight`` (dim 0 out, dim 1 in) with copied output rows and split input columns."""
    if rows is not None:
        weight = weight[rows.index]
    if cols is not None:
        shape = [1, -1] + [1] * (weight.dim() - 2)
        weight = weight[:, cols.index] * cols.split(gen).reshape(shape)
    return weight.clone()


def _grow_state(src: State, source: ModelSize, target: ModelSize, fresh: State, gen: torch.Generator) -> State:
    """The target network's state dict (``fresh`` supplies the appended blocks)."""
    out = dict(fresh)
    trunk = _widening(source.channels, target.channels, gen)
    out["stem_conv.weight"] = _rows_cols(src["stem_conv.weight"], trunk, None, gen)
    _bn(out, src, "stem_bn.", trunk)
    depth_scale = math.sqrt(target.blocks / source.blocks)
    q_new = target.channels // 4
    for i in range(source.blocks):
        p = f"blocks.{i}."
        pooling = f"{p}pool_fc.weight" in src
        mid = (_grouped_widening if pooling else _widening)(source.channels, target.channels, gen)
        out[p + "conv1.weight"] = _rows_cols(src[p + "conv1.weight"], mid, trunk, gen)
        _bn(out, src, p + "bn1.", mid)
        into_conv2 = mid
        if pooling:
            q_old = source.channels // 4
            pooled = _Widening(mid.index[:q_new], q_old)  # mean and max features of each
            features = _Widening(torch.cat([pooled.index, pooled.index + q_old]), 2 * q_old)
            into_conv2 = _Widening(mid.index[q_new:] - q_old, source.channels - q_old)
            out[p + "pool_fc.weight"] = _rows_cols(src[p + "pool_fc.weight"], into_conv2, features, gen)
            out[p + "pool_fc.bias"] = src[p + "pool_fc.bias"][into_conv2.index].clone()
        out[p + "conv2.weight"] = _rows_cols(src[p + "conv2.weight"], trunk, into_conv2, gen)
        _bn(out, src, p + "bn2.", trunk, scale=depth_scale)
        if source.se_ratio:
            _grow_squeeze_excite(out, src, p + "se.", source, target, trunk, depth_scale, gen)
    for i in range(source.blocks, target.blocks):  # appended blocks: exact identities
        out[f"blocks.{i}.bn2.weight"] = torch.zeros_like(fresh[f"blocks.{i}.bn2.weight"])
        out[f"blocks.{i}.bn2.bias"] = torch.zeros_like(fresh[f"blocks.{i}.bn2.bias"])
    reads_trunk = {"policy_head.token.weight", "next_policy_head.token.weight",
                   "value_head.conv.weight", "length_head.conv.weight"}
    for key, value in src.items():
        if key.startswith(("policy_head.", "value_head.", "next_policy_head.", "length_head.")):
            out[key] = _rows_cols(value, None, trunk, gen) if key in reads_trunk else value.clone()
    return out


def _grow_squeeze_excite(
    out: State, src: State, prefix: str, source: ModelSize, target: ModelSize, trunk: _Widening,
    depth_scale: float, gen: torch.Generator,
) -> None:
    """A block's gate for the widened, deepened network: same factors per channel
    replica, although its input (the ``bn2`` output) grew by ``depth_scale``."""
    hidden = _widening(source.se_hidden, target.se_hidden, gen)
    out[prefix + "fc1.weight"] = _rows_cols(src[prefix + "fc1.weight"], hidden, trunk, gen) / depth_scale
    out[prefix + "fc1.bias"] = src[prefix + "fc1.bias"][hidden.index].clone()
    out[prefix + "fc2.weight"] = _rows_cols(src[prefix + "fc2.weight"], trunk, hidden, gen)
    out[prefix + "fc2.bias"] = src[prefix + "fc2.bias"][trunk.index].clone()


def grow(
    net: ChessNet, size: str | ModelSize, *, seed: int = 0, table: ActionTable | None = None
) -> ChessNet:
    """A ``size`` network computing the same outputs as ``net`` in eval mode.

    ``size`` must be at least ``net.size`` in both blocks and channels (equal
    sizes give a copy); a smaller one is a ``ValueError`` naming both sizes.
    ``seed`` fixes which units are copied, the weight splits and the appended
    blocks' initial convolutions.  ``table`` is the action table (default: the
    core's), as for :class:`ChessNet`.  The result has the source's auxiliary
    heads (or not), device and train/eval mode; ``net`` is left unchanged.
    """
    target = check_growth(net.size, size)
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # seeded init, global RNG left alone
        torch.manual_seed(seed)
        grown = ChessNet(target, table=table, aux_heads=net.has_aux_heads)
    src = {k: v.detach().cpu() for k, v in net.state_dict().items()}
    state = _grow_state(src, net.size, target, grown.state_dict(), gen)
    grown.load_state_dict(state)
    device = next(net.parameters()).device
    return grown.to(device).train(net.training)
