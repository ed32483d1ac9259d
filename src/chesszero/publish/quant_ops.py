"""Fake-quantisation building blocks for the deployment network (SPEC 9).

The INT8 scheme, chosen to be what both ONNX Runtime and TensorRT execute
natively from explicit QuantizeLinear/DequantizeLinear (QDQ) nodes:

- weights of the quantised convolutions: per-output-channel symmetric int8,
  zero point 0, ``scale_c = max|w_c| / qmax_w`` (:func:`weight_scales`);
- activations: per-tensor, zero point 0, ``amax`` observed on the
  calibration set (:class:`ActQuant`): int8 with ``scale = amax / 127``, or
  for ReLU6 outputs under :attr:`QuantScheme.CPU` uint8 with
  ``scale = amax / 255``;
- convolution biases: int32 at ``scale_in * scale_w`` (what an integer
  convolution adds to its int32 accumulator; :func:`quantize_bias`).

:class:`QuantScheme` exists because the two runtimes need different grids:

- ``TENSORRT``: every activation int8 with zero point 0 (all TensorRT
  accepts), weights on the full ``[-127, 127]``.  TensorRT fuses
  ``Conv -> ReLU6 -> Q`` itself.
- ``CPU`` (ONNX Runtime on x86): ReLU6 outputs on uint8 with zero point 0 --
  ONNX Runtime fuses ``DQ -> Conv -> Clip -> Q`` into an integer
  ``QLinearConv`` only when ``Q``'s range implies the clip, which signed
  activations do not (half the convolutions would stay float) -- and weights
  on ``[-63, 63]``.  The 7-bit weights are deliberate: without AVX-VNNI,
  ONNX Runtime's u8s8 kernels multiply with ``vpmaddubsw``, whose int16
  pair sums saturate for ``|a| * |w| * 2 > 32767``; with 8-bit weights a
  measured QLinearConv was off by up to 30 output steps on 11% of outputs,
  with 7-bit weights it is exact (``2 * 255 * 63 < 32767``), on every x86
  CPU alike.

Rounding uses straight-through gradients so quantisation-aware fine-tuning
can train the weights through the rounding.

:class:`QuantMode` switches a whole deployment network between float
execution, observing activation ranges and fake-quantised execution.
"""

from __future__ import annotations

import enum

import torch
from torch import nn

__all__ = [
    "CPU_WEIGHT_MAX",
    "INT8_MAX",
    "MIN_SCALE",
    "SIGNED_ON_UINT8",
    "UINT8_MAX",
    "ActQuant",
    "QuantMode",
    "QuantScheme",
    "fake_quant_weight",
    "quantize_bias",
    "weight_scales",
]

INT8_MAX = 127
"""Top of the symmetric int8 grids (scales map the observed range onto +-127)."""
UINT8_MAX = 255
"""Top of the uint8 grid of non-negative activations."""
CPU_WEIGHT_MAX = 63
"""Weight grid of :attr:`QuantScheme.CPU` (saturation-free u8s8 on AVX2)."""
MIN_SCALE = 1e-8
"""Floor for scales so an all-zero tensor or channel still has a valid grid."""
SIGNED_ON_UINT8 = 128
"""``cpu_zero_point`` of a signed activation kept on uint8 (see :class:`ActQuant`)."""
INT32_MAX = 2**31 - 1


class QuantMode(str, enum.Enum):
    """How the quantisers of a deployment network behave."""

    FLOAT = "float"
    """Quantisers are identities: the folded float network."""
    OBSERVE = "observe"
    """Activation quantisers record the largest magnitude they see; outputs stay float."""
    FAKE_QUANT = "fake_quant"
    """Weights, biases and activations are rounded to their integer grids."""


class QuantScheme(str, enum.Enum):
    """Integer grids for one target runtime; see the module docstring."""

    CPU = "cpu"
    """ONNX Runtime on x86: ReLU6 outputs on uint8, other activations int8, 7-bit weights."""
    TENSORRT = "tensorrt"
    """TensorRT: every activation on int8 with zero point 0, 8-bit weights."""

    @property
    def weight_qmax(self) -> int:
        """Largest weight magnitude on the integer grid."""
        return CPU_WEIGHT_MAX if self is QuantScheme.CPU else INT8_MAX


class ActQuant(nn.Module):
    """Per-tensor activation quantiser (zero point 0) with a max-abs observer.

    ``amax`` (a buffer, saved with the state dict) is the calibrated range.
    ``nonnegative`` marks a ReLU6 output: under
    :attr:`QuantScheme.CPU` it is quantised on uint8
    (``scale = amax / 255``), otherwise on int8 (``scale = amax / 127``).
    In :attr:`QuantMode.FAKE_QUANT` the forward pass rounds to the grid and
    back, with a straight-through gradient inside the range.

    ``fixed_scale`` gives a step that calibration never changes and every
    scheme keeps (``amax`` stays 0), and ``cpu_zero_point`` a uint8 zero
    point for :attr:`QuantScheme.CPU` (TensorRT takes only int8 with zero
    point 0): the network input, whose values are known in advance
    (:class:`~chesszero.publish.deploy_net.DeployNet`), goes onto a grid that
    holds it exactly. A calibrated signed quantiser with zero point 128
    (:data:`SIGNED_ON_UINT8`) is the int8 grid moved onto uint8, the same
    values step for step: ONNX Runtime fuses a convolution into an integer
    kernel only when its input and output share a type, so a signed output of
    a convolution fed by a uint8 activation is written this way.
    """

    def __init__(
        self, *, nonnegative: bool, fixed_scale: float | None = None, cpu_zero_point: int = 0
    ) -> None:
        super().__init__()
        if not 0 <= cpu_zero_point <= UINT8_MAX or (cpu_zero_point and nonnegative):
            raise ValueError(f"invalid uint8 zero point {cpu_zero_point} (nonnegative={nonnegative})")
        self.nonnegative = nonnegative
        self.mode = QuantMode.FLOAT
        self.scheme = QuantScheme.CPU
        self.export_scale: float | None = None
        self.fixed_scale = fixed_scale
        self.cpu_zero_point = cpu_zero_point
        self.register_buffer("amax", torch.zeros(()))

    @property
    def fixed(self) -> bool:
        """Whether the step is fixed (never calibrated)."""
        return self.fixed_scale is not None

    @property
    def unsigned(self) -> bool:
        """Whether this quantiser uses the uint8 grid under the current scheme."""
        return (self.nonnegative or self.cpu_zero_point > 0) and self.scheme is QuantScheme.CPU

    @property
    def zero_point(self) -> int:
        """The integer that stands for 0 under the current scheme."""
        return self.cpu_zero_point if self.scheme is QuantScheme.CPU else 0

    @property
    def qrange(self) -> tuple[int, int]:
        """``(qmin, qmax)`` of the integer grid."""
        return (0, UINT8_MAX) if self.unsigned else (-128, INT8_MAX)

    @property
    def calibrated(self) -> bool:
        """Whether a range has been observed (or the step is fixed)."""
        return self.fixed or bool(self.amax > 0)

    @property
    def scale(self) -> torch.Tensor:
        """The quantisation step (0-d tensor)."""
        if self.fixed_scale is not None:
            return torch.tensor(self.fixed_scale, device=self.amax.device)
        # amax maps onto the top of the grid above the zero point: 255 steps on
        # uint8 from 0, 127 on int8, and 127 on uint8 from zero point 128 (the
        # int8 grid shifted, see ``cpu_zero_point``).
        return torch.clamp(self.amax / (self.qrange[1] - self.zero_point), min=MIN_SCALE)

    def freeze(self) -> None:
        """Fix the scale as a Python float (exported as a constant)."""
        if not self.calibrated:
            raise RuntimeError("cannot freeze an uncalibrated activation quantiser")
        self.export_scale = float(self.scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode is QuantMode.OBSERVE and not self.fixed:
            with torch.no_grad():
                self.amax.copy_(torch.maximum(self.amax, x.detach().abs().amax().float()))
            return x
        if self.mode is QuantMode.FAKE_QUANT:
            qmin, qmax = self.qrange
            if self.export_scale is not None:  # a constant, so ONNX export emits fixed Q/DQ
                return torch.fake_quantize_per_tensor_affine(x, self.export_scale, self.zero_point, qmin, qmax)
            if not self.calibrated:
                raise RuntimeError("activation quantiser used before calibration (amax is 0)")
            zero = torch.full((), self.zero_point, dtype=torch.int32, device=x.device)
            return torch.fake_quantize_per_tensor_affine(x, self.scale.float(), zero, qmin, qmax)
        return x

    def extra_repr(self) -> str:
        grid = "uint8" if self.unsigned else "int8"
        if self.fixed_scale is not None:
            return f"mode={self.mode.value}, grid={grid}, fixed scale={self.fixed_scale:.4g}"
        return f"mode={self.mode.value}, grid={grid}, amax={float(self.amax):.4g}"


def weight_scales(weight: torch.Tensor, qmax: int = INT8_MAX) -> torch.Tensor:
    """Per-output-channel symmetric scales ``max|w_c| / qmax`` (detached)."""
    amax = weight.detach().abs().flatten(1).amax(dim=1)
    return torch.clamp(amax / qmax, min=MIN_SCALE)


def fake_quant_weight(weight: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Round ``weight`` to its per-channel int8 grid (axis 0), straight-through gradient."""
    zero = torch.zeros(scales.shape, dtype=torch.int32, device=weight.device)
    return torch.fake_quantize_per_channel_affine(weight, scales.float(), zero, 0, -128, 127)


def quantize_bias(bias: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Round ``bias`` to the int32 grid ``scale`` (per channel), straight-through gradient."""
    q = torch.clamp(torch.round(bias / scale), -INT32_MAX, INT32_MAX) * scale
    return bias + (q - bias).detach()
