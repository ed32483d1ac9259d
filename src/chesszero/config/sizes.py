"""Network size ladder: parse ``"BxC"`` strings into typed sizes.

SPEC 4 names the paper ladder (12x128, 14x160, 19x176) and smaller CPU
presets (6x64, 8x96) that keep the same structure.  Any ``"BxC"`` string
with ``C`` divisible by 4 (global pooling splits the channels into quarters)
is accepted, so tiny smoke-test networks such as ``"2x16"`` work too.

A suffix ``-seR`` (``"4x48-se4"``) adds squeeze-and-excitation to every
block's branch with a hidden width of ``C / R`` (issue 22; not in SPEC 4,
off unless asked for: ``model.se_ratio`` in a recipe). The suffix is part of
the size's name, so checkpoints and deployment states that record a size
record it too.  A suffix ``-at`` (``"4x48-at"``, ``"4x48-se4-at"``) gives the
stem two more input planes, the squares each side attacks, computed inside
the network from SPEC 2's piece planes (:mod:`chesszero.model.attacks`;
issue 22, not in SPEC 4; ``model.attack_planes`` in a recipe).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NAMED_SIZES", "ModelSize", "parse_size"]

_SIZE_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*(?:-\s*se\s*(\d+))?\s*(-\s*at)?\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ModelSize:
    """Trunk shape: ``blocks`` residual blocks of ``channels`` channels, with
    squeeze-and-excitation of hidden width ``channels // se_ratio`` when
    ``se_ratio`` > 0, and attacked-square input planes when ``attacks``."""

    blocks: int
    channels: int
    se_ratio: int = 0
    attacks: bool = False

    def __post_init__(self) -> None:
        if self.blocks < 1:
            raise ValueError(f"model size needs at least one block, got {self.blocks}")
        if self.channels < 4 or self.channels % 4 != 0:
            raise ValueError(
                f"model channels must be a positive multiple of 4 (global pooling "
                f"uses C/4 and 3C/4), got {self.channels}"
            )
        if self.se_ratio < 0 or self.se_ratio > self.channels:
            raise ValueError(
                f"squeeze-and-excitation ratio must be 0 (off) or 1..{self.channels} (hidden width "
                f"C / ratio of at least 1), got {self.se_ratio}"
            )

    @property
    def name(self) -> str:
        """Canonical ``"BxC"`` spelling (``"BxC-seR"`` with squeeze-and-excitation, ``-at`` with attack planes)."""
        base = f"{self.blocks}x{self.channels}"
        base = f"{base}-se{self.se_ratio}" if self.se_ratio else base
        return f"{base}-at" if self.attacks else base

    @property
    def se_hidden(self) -> int:
        """Hidden width of each block's squeeze-and-excitation (0 without it)."""
        return self.channels // self.se_ratio if self.se_ratio else 0

    def with_se(self, ratio: int) -> ModelSize:
        """The same network with squeeze-and-excitation ratio ``ratio`` (0: none)."""
        return ModelSize(self.blocks, self.channels, ratio, self.attacks)

    def with_attacks(self, attacks: bool) -> ModelSize:
        """The same network with (or without) the attacked-square input planes."""
        return ModelSize(self.blocks, self.channels, self.se_ratio, bool(attacks))

    @property
    def plain(self) -> bool:
        """Whether this is SPEC 4's network: no squeeze-and-excitation, no attack planes."""
        return not self.se_ratio and not self.attacks

    def __str__(self) -> str:
        return self.name


NAMED_SIZES: dict[str, ModelSize] = {
    name: ModelSize(b, c)
    for name, (b, c) in {
        "6x64": (6, 64),
        "8x96": (8, 96),
        "12x128": (12, 128),
        "14x160": (14, 160),
        "19x176": (19, 176),
    }.items()
}


def parse_size(size: str | ModelSize) -> ModelSize:
    """Return the :class:`ModelSize` for a ladder name or any ``"BxC"`` / ``"BxC-seR"`` string
    (either with ``-at`` appended).

    Raises ``ValueError`` quoting the input when it is not of that form.
    """
    if isinstance(size, ModelSize):
        return size
    match = _SIZE_RE.match(size)
    if match is None:
        raise ValueError("model size must look like 'BxC', 'BxC-seR' or either with '-at' "
                         f"(e.g. '14x160', '6x64-se4', '4x48-at'), got {size!r}")
    return ModelSize(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0), match.group(4) is not None)
