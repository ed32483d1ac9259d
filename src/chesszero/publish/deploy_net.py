"""The deployment network: folded SPEC 4 topology with optional INT8 fake quantisation.

Built by :func:`chesszero.publish.fold.fold_network` from a training
:class:`~chesszero.model.ChessNet`; never constructed from scratch.

- BatchNorm and the residual branch scale ``1/sqrt(B)`` live inside the
  convolution weights and biases (:class:`DeployConv`); the policy head's
  query and key are folded (:class:`FoldedPolicyHead`); training-only heads
  are absent.
- Quantised (INT8) in :attr:`QuantMode.FAKE_QUANT`: the two convolutions of
  every residual block.  Float: the stem, the global-pooling path (pooling
  and its Linear), the policy and WDL heads -- SPEC 9's split.
- Optionally (``int8_stem``, ``publish.int8_stem``; off by default, since
  SPEC 9 keeps the start block in float) the stem convolution is INT8 too,
  on an exact input grid: the scalar planes are divided by
  :data:`SCALAR_PLANE_DIVISOR` (the stem weights multiplied to match at
  folding, :func:`stem_weights`), which puts every plane on integers of the
  grid -- uint8 with zero point :data:`INPUT_ZERO_POINT` on the CPU scheme
  -- with 8-bit stem weights under every scheme (the bound is in
  :data:`INPUT_ZERO_POINT`) and a bias correction
  (:func:`~chesszero.publish.quantize.correct_stem_bias`).  With 7-bit stem
  weights the gate's policy top-1 agreement fell by 1-2 points on the
  checkpoints measured; as built, by about 1 (docs/benchmarks.md has the
  speed and fidelity measured both ways).
- A block with squeeze-and-excitation (sizes ``"BxC-seR"``) keeps its gate
  in float (:class:`DeploySqueezeExcite`) between the second convolution,
  whose output gets a quantiser of its own so the convolution stays INT8,
  and the branch quantiser.
- A network with attack planes (sizes ``"BxC-at"``) computes them in float
  from the input planes with the same fixed module as training
  (:class:`~chesszero.model.attacks.AttackPlanes`) and appends them to the
  stem's input; they are binary, so the INT8 stem's input grid holds them
  exactly (scale 1, like planes 0-39).
- Activation quantisers (:class:`ActQuant`) sit where an integer runtime
  needs them: the input (with ``int8_stem``; fixed, see above), stem
  output, each block's middle activation, the (biased) input of a pooling
  block's second convolution, each block's branch output
  before the residual add, and each block output except the last (which
  feeds only the float heads).
- ``forward`` returns ``(policy_logits [N, 1880], wdl [N, 3])`` with the WDL
  already softmaxed -- exactly the exported ONNX outputs.  A network folded
  with the remaining-length head (``fold_network(..., moves_left=True)``, for
  the search's moves-left utility) returns a third output, ``moves_left
  [N]``: the plies left in the game (the head's ``plies / 400`` scaled back),
  computed in float from the trunk's output like the other heads.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from chesszero import core
from chesszero.config.sizes import ModelSize
from chesszero.model.attacks import AttackPlanes
from chesszero.publish.policy_fold import FoldedPolicyHead
from chesszero.publish.quant_ops import (
    INT8_MAX,
    SIGNED_ON_UINT8,
    ActQuant,
    QuantMode,
    QuantScheme,
    fake_quant_weight,
    quantize_bias,
    weight_scales,
)

__all__ = [
    "INPUT_SCALE",
    "INPUT_ZERO_POINT",
    "SCALAR_PLANE_DIVISOR",
    "DeployConv",
    "DeployNet",
    "DeployPoolingBlock",
    "DeployResidualBlock",
    "DeployLengthHead",
    "DeploySqueezeExcite",
    "DeployWdlHead",
    "input_scale",
    "stem_weights",
]


SCALAR_PLANE_DIVISOR = 2
"""The scalar planes (SPEC 2 planes 40-51) enter the stem divided by this,
their weights multiplied by it, on an input grid of step
``1 / SCALAR_PLANE_DIVISOR``: binary planes become the integer 2 and every
scalar plane its own integer value, so quantising the input is exact.
Dividing shrinks the rounding error of the large-valued planes' weights
(the halfmove clock reaches 100) but coarsens the grid of the binary
planes' weights once the scaled scalar weights are the larger.  Legal-policy
KL of the INT8 network against its source for the 2x16 test network and
4x48 / 6x64 campaign checkpoints: divisor 1: 0.0026, 0.0020, 0.0026;
divisor 2: 0.0030, 0.0016, 0.0016; a float stem: 0.0029, 0.0009, 0.0012.
Divisors 4 and 8 (measured on an equivalent input form) took the test
network to 0.0038."""
INPUT_SCALE = 1.0 / SCALAR_PLANE_DIVISOR
"""The fixed step of the input quantiser."""
INPUT_ZERO_POINT = 16
"""The input's uint8 zero point under :attr:`QuantScheme.CPU`: material
differences (at least -10) land at 6 or more, the halfmove clock (at most
100) at 116 or less, so ONNX Runtime's u8s8 kernels multiply bytes of at
most 116 -- and the stem keeps 8-bit weights where the other convolutions
use 7: ``2 * 116 * 127 = 29,464`` stays below the int16 saturation of
``vpmaddubsw`` pair sums on CPUs without VNNI."""
_BINARY = core.NUM_BINARY_PLANES


def input_scale(planes: int = core.NUM_PLANES) -> torch.Tensor:
    """Per-plane factors of a stem input of ``planes`` planes ``[1, planes, 1, 1]``: 1, or
    ``1 / SCALAR_PLANE_DIVISOR`` on SPEC 2's scalar planes (1 on the binary attack planes after them)."""
    if planes < core.NUM_PLANES:
        raise ValueError(f"a stem input has at least {core.NUM_PLANES} planes, got {planes}")
    scale = torch.ones(planes)
    scale[_BINARY : core.NUM_PLANES] = INPUT_SCALE
    return scale[None, :, None, None]


@torch.no_grad()
def stem_weights(weight: torch.Tensor) -> torch.Tensor:
    """Stem weights on the scaled input ``planes * input_scale()``, equal to ``weight`` on the planes."""
    return weight / input_scale(weight.shape[1]).to(weight)


class DeployConv(nn.Module):
    """A folded convolution (weight and bias), optionally INT8 fake-quantised.

    When ``quantizable`` and the network is in :attr:`QuantMode.FAKE_QUANT`,
    the weight is rounded per output channel and the bias plus
    ``bias_correction`` (zero unless calibration set it, see
    :func:`~chesszero.publish.quantize.correct_stem_bias`) to the int32 grid
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
        self.register_buffer("bias_correction", torch.zeros_like(self.bias))

    def quantized_params(self, x_quant: ActQuant) -> tuple[torch.Tensor, torch.Tensor]:
        """Weight and bias as the INT8 runtime sees them (fake-quantised, float dtype)."""
        if self.export_scales is not None and self.export_bias is not None:
            return fake_quant_weight(self.weight, self.export_scales), self.export_bias
        scales = weight_scales(self.weight, self.weight_qmax)
        weight = fake_quant_weight(self.weight, scales)
        bias = quantize_bias(self.bias + self.bias_correction, x_quant.scale * scales)
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
        self.export_bias = quantize_bias(self.bias + self.bias_correction, x_quant.scale * scales).detach().clone()

    def forward(self, x: torch.Tensor, x_quant: ActQuant | None = None) -> torch.Tensor:
        weight, bias = self.weight, self.bias
        if self.quantizable and self.mode is QuantMode.FAKE_QUANT:
            if x_quant is None:
                raise ValueError("a quantised convolution needs its input quantiser")
            weight, bias = self.quantized_params(x_quant)
        return F.conv2d(x, weight, bias, padding=self.padding)


class DeploySqueezeExcite(nn.Module):
    """A block's squeeze-and-excitation gate in float, on the folded branch.

    The training gate reads ``bn2``'s output; the folded branch is that times
    the branch scale, so ``fc1``'s weights come divided by the scale
    (:func:`~chesszero.publish.fold.fold_network`) and the factors are the
    training network's.
    """

    def __init__(self, fc1: nn.Linear, fc2: nn.Linear) -> None:
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.fc2(torch.relu(self.fc1(y.mean(dim=(2, 3))))))
        return y * gate[:, :, None, None]


class _DeployBlock(nn.Module):
    """What both deployment blocks share: the optional gate and the branch's closing quantisers."""

    se: DeploySqueezeExcite | None
    se_q: ActQuant | None

    def _close(self, se: DeploySqueezeExcite | None, *, quantize_output: bool) -> None:
        # conv2 reads a uint8 activation, so its signed output stays on uint8
        # (zero point 128) for ONNX Runtime to keep it an integer convolution.
        self.se_q = ActQuant(nonnegative=False, cpu_zero_point=SIGNED_ON_UINT8) if se is not None else None
        self.se = se
        self.branch_q = ActQuant(nonnegative=False)
        self.out_q = ActQuant(nonnegative=True) if quantize_output else None

    def _branch_end(self, x: torch.Tensor, conv2_out: torch.Tensor) -> torch.Tensor:
        """``conv2_out`` [-> quantise -> gate] -> quantise -> ``+ x`` -> ReLU6 [-> quantise]."""
        y = conv2_out
        if self.se is not None and self.se_q is not None:
            y = self.se(self.se_q(y))
        out = F.relu6(x + self.branch_q(y))
        return out if self.out_q is None else self.out_q(out)


class DeployResidualBlock(_DeployBlock):
    """conv -> ReLU6 -> conv (scale folded) [-> gate] -> ``+ x`` -> ReLU6, both convolutions INT8.

    ``quantize_output=False`` (the last block) leaves the output in float: it
    feeds only the float heads, so rounding it would cost fidelity for no
    integer arithmetic.
    """

    def __init__(
        self, conv1: DeployConv, conv2: DeployConv, *, quantize_output: bool, se: DeploySqueezeExcite | None = None
    ) -> None:
        super().__init__()
        self.conv1, self.conv2 = conv1, conv2
        self.mid_q = ActQuant(nonnegative=True)
        self._close(se, quantize_output=quantize_output)

    def forward(self, x: torch.Tensor, x_quant: ActQuant) -> torch.Tensor:
        y = self.mid_q(F.relu6(self.conv1(x, x_quant)))
        return self._branch_end(x, self.conv2(y, self.conv2_input))

    @property
    def conv2_input(self) -> ActQuant:
        """The quantiser of the second convolution's input."""
        return self.mid_q


class DeployPoolingBlock(_DeployBlock):
    """Global-pooling block: INT8 convolutions, float pooling and pooled Linear.

    ``quantize_output`` and ``se`` as for :class:`DeployResidualBlock`.
    """

    def __init__(
        self,
        conv1: DeployConv,
        pool_fc: nn.Linear,
        conv2: DeployConv,
        pooled: int,
        *,
        quantize_output: bool,
        se: DeploySqueezeExcite | None = None,
    ) -> None:
        super().__init__()
        self.conv1, self.pool_fc, self.conv2 = conv1, pool_fc, conv2
        self.pooled = pooled
        self.mid_q = ActQuant(nonnegative=True)
        self.rest_q = ActQuant(nonnegative=False)
        self._close(se, quantize_output=quantize_output)

    def forward(self, x: torch.Tensor, x_quant: ActQuant) -> torch.Tensor:
        y = self.mid_q(F.relu6(self.conv1(x, x_quant)))
        g, r = y[:, : self.pooled], y[:, self.pooled :]
        pooled = torch.cat([g.mean(dim=(2, 3)), g.amax(dim=(2, 3))], dim=1)
        r = self.rest_q(r + self.pool_fc(pooled)[:, :, None, None])
        return self._branch_end(x, self.conv2(r, self.conv2_input))

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


class DeployLengthHead(nn.Module):
    """Remaining-length head with its BatchNorm folded into the 1x1 convolution (float);
    returns plies (the training head's ``plies / 400`` times ``core.LENGTH_SCALE``)."""

    def __init__(self, conv: DeployConv, fc: nn.Linear) -> None:
        super().__init__()
        self.conv, self.fc = conv, fc

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv(x)).flatten(1)
        return self.fc(h).squeeze(1) * core.LENGTH_SCALE


class DeployNet(nn.Module):
    """Deployment network: ``planes -> (policy_logits [N, 1880], wdl [N, 3] probabilities[,
    moves_left [N] plies])``."""

    def __init__(
        self,
        size: ModelSize,
        stem: DeployConv,
        blocks: list[DeployResidualBlock | DeployPoolingBlock],
        policy_head: FoldedPolicyHead,
        value_head: DeployWdlHead,
        *,
        int8_stem: bool = False,
        length_head: DeployLengthHead | None = None,
    ) -> None:
        super().__init__()
        if stem.quantizable != int8_stem:
            raise ValueError(f"the stem's quantizable flag ({stem.quantizable}) must match int8_stem ({int8_stem})")
        self.size = size
        self.attacks = AttackPlanes() if size.attacks else None
        self.stem = stem
        self.int8_stem = int8_stem
        """Whether the stem is an INT8 convolution on the scaled input (weights from :func:`stem_weights`)."""
        self.input_scale: torch.Tensor | None
        self.input_q: ActQuant | None
        if int8_stem:
            stem.weight_qmax = INT8_MAX  # every scheme: see INPUT_ZERO_POINT
            self.register_buffer("input_scale", input_scale(stem.weight.shape[1]).to(stem.weight.device))
            self.input_q = ActQuant(nonnegative=False, fixed_scale=INPUT_SCALE, cpu_zero_point=INPUT_ZERO_POINT)
        else:
            self.register_buffer("input_scale", None)
            self.input_q = None
        self.stem_q = ActQuant(nonnegative=True)
        self.blocks = nn.ModuleList(blocks)
        self.policy_head = policy_head
        self.value_head = value_head
        self.length_head = length_head

    @property
    def moves_left(self) -> bool:
        """Whether the network gives the plies-left output (a folded length head)."""
        return self.length_head is not None

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
            conv.weight_qmax = INT8_MAX if conv is self.stem else scheme.weight_qmax
        return self

    def act_quants(self) -> Iterator[tuple[str, ActQuant]]:
        """All activation quantisers with their qualified names, in graph order."""
        for name, module in self.named_modules():
            if isinstance(module, ActQuant):
                yield name, module

    def quantized_convs(self) -> Iterator[tuple[str, DeployConv, ActQuant]]:
        """The INT8 convolutions with their qualified names and input quantisers."""
        if self.input_q is not None:
            yield "stem", self.stem, self.input_q
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

    def stem_input(self, planes: torch.Tensor) -> torch.Tensor:
        """The stem's input: the planes (with the attack planes appended for ``-at`` sizes),
        with ``int8_stem`` scaled and quantised."""
        if self.attacks is not None:
            planes = torch.cat([planes, self.attacks(planes)], dim=1)
        if self.input_scale is None or self.input_q is None:
            return planes
        return self.input_q(planes * self.input_scale)

    def trunk(self, planes: torch.Tensor) -> torch.Tensor:
        """Trunk features ``[N, C, 8, 8]`` (the last block's output, left in float)."""
        x = self.stem_q(F.relu6(self.stem(self.stem_input(planes), self.input_q)))
        x_quant = self.stem_q
        for block in self.blocks:
            x = block(x, x_quant)
            if block.out_q is not None:
                x_quant = block.out_q
        return x

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = self.trunk(planes)
        out = (self.policy_head(x), torch.softmax(self.value_head(x), dim=1))
        return out if self.length_head is None else (*out, self.length_head(x))
