"""Network size ladder: parse ``"BxC"`` strings into typed sizes.

SPEC 4 names the paper ladder (12x128, 14x160, 19x176) and smaller CPU
presets (6x64, 8x96) that keep the same structure.  Any ``"BxC"`` string
with ``C`` divisible by 4 (global pooling splits the channels into quarters)
is accepted, so tiny smoke-test networks such as ``"2x16"`` work too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NAMED_SIZES", "ModelSize", "parse_size"]

_SIZE_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


@dataclass(frozen=True, slots=True)
class ModelSize:
    """Trunk shape: ``blocks`` residual blocks of ``channels`` channels."""

    blocks: int
    channels: int

    def __post_init__(self) -> None:
        if self.blocks < 1:
            raise ValueError(f"model size needs at least one block, got {self.blocks}")
        if self.channels < 4 or self.channels % 4 != 0:
            raise ValueError(
                f"model channels must be a positive multiple of 4 (global pooling "
                f"uses C/4 and 3C/4), got {self.channels}"
            )

    @property
    def name(self) -> str:
        """Canonical ``"BxC"`` spelling."""
        return f"{self.blocks}x{self.channels}"

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
    """Return the :class:`ModelSize` for a ladder name or any ``"BxC"`` string.

    Raises ``ValueError`` quoting the input when it is not of that form.
    """
    if isinstance(size, ModelSize):
        return size
    match = _SIZE_RE.match(size)
    if match is None:
        raise ValueError(f"model size must look like 'BxC' (e.g. '14x160'), got {size!r}")
    return ModelSize(int(match.group(1)), int(match.group(2)))
