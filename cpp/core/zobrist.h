// Layer 2 helper: Zobrist keys of the position identity (pieces, castling
// rights, legal en-passant file, side to move). Generated at compile time by
// a fixed splitmix64 stream, so keys are the same in every build and lookups
// inline to one load.
#pragma once

#include "core/types.h"

namespace cz::zobrist {

struct Keys {
  Key psq[16][64] = {};
  Key castle[16] = {};
  Key ep[8] = {};
  Key side = 0;

  constexpr Keys() {
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    auto next = [&s]() {  // splitmix64
      uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      return z ^ (z >> 31);
    };
    for (auto& row : psq)
      for (auto& k : row) k = next();
    Key single[4] = {};
    for (auto& k : single) k = next();
    for (int r = 1; r < 16; ++r)
      for (int b = 0; b < 4; ++b)
        if (r & (1 << b)) castle[r] ^= single[b];
    for (auto& k : ep) k = next();
    side = next();
  }
};

inline constexpr Keys kKeys{};

inline Key piece_square(Piece p, Square s) { return kKeys.psq[p][s]; }
inline Key castling(int rights) { return kKeys.castle[rights]; }
inline Key ep_file(int file) { return kKeys.ep[file]; }
inline Key side() { return kKeys.side; }

}  // namespace cz::zobrist
