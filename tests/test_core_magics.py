"""The precomputed slider magics (cpp/core/magics.h), checked independently.

For every square the test re-derives the relevance mask, enumerates every
occupancy subset of it, computes the true attack set by walking the rays, and
checks that the magic index ``((occ & mask) * magic mod 2^64) >> (64 - bits)``
never sends two subsets with different attack sets to the same slot. This is
exactly what the table fill in bitboard.cpp relies on.
"""

import re
from pathlib import Path

import numpy as np
import pytest

MAGICS_H = Path(__file__).resolve().parents[1] / "cpp" / "core" / "magics.h"
ROOK_DIRS = [(1, 0), (-1, 0), (0, 1), (0, -1)]
BISHOP_DIRS = [(1, 1), (-1, -1), (1, -1), (-1, 1)]


def read_magics(name: str) -> list[int]:
    text = MAGICS_H.read_text()
    body = re.search(rf"k{name}\[64\] = \{{(.*?)\}};", text, re.S)
    assert body is not None, f"k{name} not found in {MAGICS_H}"
    values = [int(v, 16) for v in re.findall(r"0x([0-9A-Fa-f]{16})ULL", body.group(1))]
    assert len(values) == 64
    return values


def ray_squares(square: int, df: int, dr: int) -> list[int]:
    f, r = square % 8 + df, square // 8 + dr
    out = []
    while 0 <= f < 8 and 0 <= r < 8:
        out.append(r * 8 + f)
        f, r = f + df, r + dr
    return out


def relevance_mask(square: int, dirs: list[tuple[int, int]]) -> list[int]:
    """Ray squares that can block: every ray square but the last (the edge)."""
    return [s for d in dirs for s in ray_squares(square, *d)[:-1]]


def attacks(square: int, dirs: list[tuple[int, int]], occ: np.ndarray) -> np.ndarray:
    """Attack sets of `square` for each occupancy in `occ` (uint64 array)."""
    out = np.zeros_like(occ)
    for d in dirs:
        open_ = np.ones(occ.shape, dtype=bool)  # no blocker met yet on this ray
        for s in ray_squares(square, *d):
            bit = np.uint64(1 << s)
            out |= np.where(open_, bit, np.uint64(0))
            open_ &= (occ & bit) == 0
    return out


@pytest.mark.parametrize("name,dirs,table_size", [("Rook", ROOK_DIRS, 0x19000),
                                                  ("Bishop", BISHOP_DIRS, 0x1480)])
def test_magics_map_every_occupancy_without_destructive_collisions(
    name: str, dirs: list[tuple[int, int]], table_size: int
) -> None:
    magics = read_magics(name)
    total = 0
    for square, magic in enumerate(magics):
        mask_squares = relevance_mask(square, dirs)
        bits = len(mask_squares)
        total += 1 << bits
        subset = np.arange(1 << bits, dtype=np.uint64)
        occ = np.zeros(1 << bits, dtype=np.uint64)
        for j, s in enumerate(mask_squares):  # subset bit j -> board square s
            occ |= ((subset >> np.uint64(j)) & np.uint64(1)) << np.uint64(s)
        with np.errstate(over="ignore"):
            index = (occ * np.uint64(magic)) >> np.uint64(64 - bits)
        want = attacks(square, dirs, occ)
        order = np.argsort(index, kind="stable")
        index, want = index[order], want[order]
        same_slot = index[1:] == index[:-1]
        clash = same_slot & (want[1:] != want[:-1])
        assert not clash.any(), f"{name.lower()} magic of square {square} collides destructively"
    assert total == table_size  # the attack tables in bitboard.cpp have exactly this size
