"""The deployment network: folded SPEC 4 topology with optional INT8 fake quantisation.

Built by :func:`chesszero.publish.fold.fold_network` from a training
:class:`~chesszero.model.ChessNet`; never constructed from scratch.

- BatchNorm and the residual branch scale ``1/sqrt(B)`` live inside the
  convolution weights and biases (:class:`DeployConv`); the policy head's
  query and key are folded (:class:`FoldedPolicyHead`); training-only heads
  are absent.
- Quantised (INT8) in :attr:`QuantMode.FAKE_QUANT`: the two convolutions of
  every residual block.  Float: the stem, the global-pooling path (pooling
  and its Linear), the policy and WDL heads.
- Activation quantisers (:class:`ActQuant`) sit where an integer runtime
  needs them: stem output, each block's middle activation, the (biased)
  input of a pooling block's second convolution, each block's branch output
  before the residual add, and each block output except the last (which
  feeds only the float heads).
- ``forward`` returns ``(policy_logits [N, 1880], wdl [N, 3])`` with the WDL
  already softmaxed -- exactly the exported ONNX outputs.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from chesszero.config.sizes import ModelSize
from chesszero.publish.policy_fold import FoldedPolicyHead
from chesszero.publish.quant_ops import (
    ActQuant,
    QuantMode,
    QuantScheme,
    fake_quant_weight,
    quantize_bias,
    weight_scales,
)

__all__ = [
    "DeployConv",
    "DeployNet",
    "DeployPoolingBlock",
    "DeployResidualBlock",
    "DeployWdlHead",
]


class DeployConv(nn.Module):
    """A folded convolution (weight and bias), optionally INT8 fake-quantised.

    When ``quantizable`` and the network is in :attr:`QuantMode.FAKE_QUANT`,
    the weight is rounded per output channel and the bias to the int32 grid
    ``scale_in * scale_w`` given the input quantiser ``x_quant``.  The scales
    follow the weights (quantisation-aware fine-tuning) unless
    :meth:`freeze` has fixed them as buffers for export.
    """

    export_scales: torch.Tensor | None
    export_bias: torch.Tensor | None

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, *, quantizable: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone())
        self.bias = nn.Parameter(bias.detach().clone())
        self.padding = weight.shape[-1] // 2
        self.quantizable = quantizable
        self.mode = QuantMode.FLOAT
        self.weight_qmax = QuantScheme.CPU.weight_qmax
        self.register_buffer("export_scales", None)
        self.register_buffer("export_bias", None)

    def quantized_params(self, x_quant: ActQuant) -> tuple[torch.Tensor, torch.Tensor]:
        """Weight and bias as the INT8 runtime sees them (fake-quantised, float dtype)."""
        if self.export_scales is not None and self.export_bias is not None:
            return fake_quant_weight(self.weight, self.export_scales), self.export_bias
        scales = weight_scales(self.weight, self.weight_qmax)
        weight = fake_quant_weight(self.weight, scales)
        bias = quantize_bias(self.bias, x_quant.scale * scales)
        return weight, bias

    @torch.no_grad()
    def freeze(self, x_quant: ActQuant) -> None:
        """Fix the weight scales and the rounded bias as constant buffers (for export).

        The weight itself is snapped onto its grid, so that an exporter or
        runtime re-quantising it cannot round a value near a half-step the
        other way than torch did.
        """
        scales = weight_scales(self.weight, self.weight_qmax)
        self.weight.copy_(fake_quant_weight(self.weight, scales))
        self.export_scales = scales.clone()
        self.export_bias = quantize_bias(self.bias, x_quant.scale * scales).detach().clone()

    def forward(self, x: torch.Tensor, x_quant: ActQuant | None = None) -> torch.Tensor:
        weight, bias = self.weight, self.bias
        if self.quantizable and self.mode is QuantMode.FAKE_QUANT:
            if x_quant is None:
                raise ValueError("a quantised convolution needs its input quantiser")
            weight, bias = self.quantized_params(x_quant)
        return F.conv2d(x, weight, bias, padding=self.padding)


class DeployResidualBlock(nn.Module):
    """conv -> ReLU6 -> conv (scale folded) -> ``+ x`` -> ReLU6, both convolutions INT8.

    ``quantize_output=False`` (the last block) leaves the output in float: it
    feeds only the float heads, so rounding it would cost fidelity for no
    integer arithmetic.
    """

    def __init__(self, conv1: DeployConv, conv2: DeployConv, *, quantize_output: bool) -> None:
        super().__init__()
        self.conv1, self.conv2 = conv1, conv2
        self.mid_q = ActQuant(nonnegative=True)
        self.branch_q = ActQuant(nonnegative=False)
        self.out_q = ActQuant(nonnegative=True) if quantize_output else None

    def forward(self, x: torch.Tensor, x_quant: ActQuant) -> torch.Tensor:
        y = self.mid_q(F.relu6(self.conv1(x, x_quant)))
        y = self.branch_q(self.conv2(y, self.conv2_input))
        out = F.relu6(x + y)
        return out if self.out_q is None else self.out_q(out)

    @property
    def conv2_input(self) -> ActQuant:
        """The quantiser of the second convolution's input."""
        return self.mid_q


class DeployPoolingBlock(nn.Module):
    """Global-pooling block: INT8 convolutions, float pooling and pooled Linear.

    ``quantize_output`` as for :class:`DeployResidualBlock`.
    """

    def __init__(
        self,
        conv1: DeployConv,
        pool_fc: nn.Linear,
        conv2: DeployConv,
        pooled: int,
        *,
        quantize_output: bool,
    ) -> None:
        super().__init__()
        self.conv1, self.pool_fc, self.conv2 = conv1, pool_fc, conv2
        self.pooled = pooled
        self.mid_q = ActQuant(nonnegative=True)
        self.rest_q = ActQuant(nonnegative=False)
        self.branch_q = ActQuant(nonnegative=False)
        self.out_q = ActQuant(nonnegative=True) if quantize_output else None

    def forward(self, x: torch.Tensor, x_quant: ActQuant) -> torch.Tensor:
        y = self.mid_q(F.relu6(self.conv1(x, x_quant)))
        g, r = y[:, : self.pooled], y[:, self.pooled :]
        pooled = torch.cat([g.mean(dim=(2, 3)), g.amax(dim=(2, 3))], dim=1)
        r = self.rest_q(r + self.pool_fc(pooled)[:, :, None, None])
        y = self.branch_q(self.conv2(r, self.conv2_input))
        out = F.relu6(x + y)
        return out if self.out_q is None else self.out_q(out)

    @property
    def conv2_input(self) -> ActQuant:
        """The quantiser of the second convolution's input."""
        return self.rest_q


class DeployWdlHead(nn.Module):
    """WDL head with its BatchNorm folded into the 1x1 convolution (float)."""

    def __init__(self, conv: DeployConv, fc1: nn.Linear, fc2: nn.Linear) -> None:
        super().__init__()
        self.conv, self.fc1, self.fc2 = conv, fc1, fc2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv(x)).flatten(1)
        return self.fc2(torch.relu(self.fc1(h)))


class DeployNet(nn.Module):
    """Deployment network: ``planes -> (policy_logits [N, 1880], wdl [N, 3] probabilities)``."""

    def __init__(
        self,
        size: ModelSize,
        stem: DeployConv,
        blocks: list[DeployResidualBlock | DeployPoolingBlock],
        policy_head: FoldedPolicyHead,
        value_head: DeployWdlHead,
    ) -> None:
        super().__init__()
        self.size = size
        self.stem = stem
        self.stem_q = ActQuant(nonnegative=True)
        self.blocks = nn.ModuleList(blocks)
        self.policy_head = policy_head
        self.value_head = value_head

    @property
    def quant_mode(self) -> QuantMode:
        """The mode shared by all quantisers (set with :meth:`set_quant_mode`)."""
        return self.stem_q.mode

    def set_quant_mode(self, mode: QuantMode) -> DeployNet:
        """Switch every quantiser and quantisable convolution; returns ``self``."""
        for module in self.modules():
            if isinstance(module, (ActQuant, DeployConv)):
                module.mode = QuantMode(mode)
        return self

    @property
    def quant_scheme(self) -> QuantScheme:
        """The activation grid scheme (set with :meth:`set_quant_scheme`)."""
        return self.stem_q.scheme

    def set_quant_scheme(self, scheme: QuantScheme) -> DeployNet:
        """Choose the integer grids of every quantiser and convolution; returns ``self``."""
        scheme = QuantScheme(scheme)
        for _, quant in self.act_quants():
            quant.scheme = scheme
        for _, conv, _ in self.quantized_convs():
            conv.weight_qmax = scheme.weight_qmax
        return self

    def act_quants(self) -> Iterator[tuple[str, ActQuant]]:
        """All activation quantisers with their qualified names, in graph order."""
        for name, module in self.named_modules():
            if isinstance(module, ActQuant):
                yield name, module

    def quantized_convs(self) -> Iterator[tuple[str, DeployConv, ActQuant]]:
        """The INT8 convolutions with their qualified names and input quantisers."""
        x_quant = self.stem_q
        for i, block in enumerate(self.blocks):
            yield f"blocks.{i}.conv1", block.conv1, x_quant
            yield f"blocks.{i}.conv2", block.conv2, block.conv2_input
            if block.out_q is not None:
                x_quant = block.out_q

    def freeze(self) -> DeployNet:
        """Fix every scale and rounded bias as a constant, ready for export; returns ``self``.

        Further training would not move the frozen scales: freeze a copy.
        """
        for _, quant in self.act_quants():
            quant.freeze()
        for _, conv, x_quant in self.quantized_convs():
            conv.freeze(x_quant)
        return self

    def trunk(self, planes: torch.Tensor) -> torch.Tensor:
        """Trunk features ``[N, C, 8, 8]`` (the last block's output, left in float)."""
        x = self.stem_q(F.relu6(self.stem(planes)))
        x_quant = self.stem_q
        for block in self.blocks:
            x = block(x, x_quant)
            if block.out_q is not None:
                x_quant = block.out_q
        return x

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.trunk(planes)
        return self.policy_head(x), torch.softmax(self.value_head(x), dim=1)
