// Layer 1: bitboard helpers and attack tables (magic bitboards for sliders).
// Tables are built once, on first use, by init_bitboards() (thread-safe).
#pragma once

#include <bit>

#include "core/types.h"

namespace cz {

inline int popcount(Bitboard b) { return std::popcount(b); }
inline Square lsb(Bitboard b) { return std::countr_zero(b); }
inline Square pop_lsb(Bitboard& b) {
  Square s = lsb(b);
  b &= b - 1;
  return s;
}
inline bool more_than_one(Bitboard b) { return (b & (b - 1)) != 0; }

constexpr Bitboard FILE_A = 0x0101010101010101ULL;
constexpr Bitboard RANK_1 = 0xFFULL;
constexpr Bitboard DARK_SQUARES = 0xAA55AA55AA55AA55ULL;  // a1 is dark
constexpr Bitboard rank_bb(int r) { return RANK_1 << (8 * r); }
constexpr Bitboard file_bb(int f) { return FILE_A << f; }

struct Magic {
  Bitboard mask;
  Bitboard magic;
  Bitboard* attacks;
  unsigned shift;
  unsigned index(Bitboard occ) const { return unsigned(((occ & mask) * magic) >> shift); }
};

namespace tables {
extern Bitboard knight[64];
extern Bitboard king[64];
extern Bitboard pawn[2][64];
extern Bitboard between[64][64];  // squares strictly between (0 if not aligned)
extern Bitboard line[64][64];     // the full line through both (0 if not aligned)
extern Magic rook_magic[64];
extern Magic bishop_magic[64];
}  // namespace tables

void init_bitboards();

inline Bitboard knight_attacks(Square s) { return tables::knight[s]; }
inline Bitboard king_attacks(Square s) { return tables::king[s]; }
inline Bitboard pawn_attacks(Color c, Square s) { return tables::pawn[c][s]; }
inline Bitboard rook_attacks(Square s, Bitboard occ) {
  const Magic& m = tables::rook_magic[s];
  return m.attacks[m.index(occ)];
}
inline Bitboard bishop_attacks(Square s, Bitboard occ) {
  const Magic& m = tables::bishop_magic[s];
  return m.attacks[m.index(occ)];
}
inline Bitboard queen_attacks(Square s, Bitboard occ) {
  return rook_attacks(s, occ) | bishop_attacks(s, occ);
}
inline Bitboard between_bb(Square a, Square b) { return tables::between[a][b]; }
inline Bitboard line_bb(Square a, Square b) { return tables::line[a][b]; }

// Reverse ranks (a1 <-> a8): the colour flip of the encoding.
inline Bitboard flip_ranks(Bitboard b) { return __builtin_bswap64(b); }
// Reverse files within each rank (a1 <-> h1): the file reflection.
inline Bitboard mirror_files(Bitboard b) {
  b = ((b >> 1) & 0x5555555555555555ULL) | ((b & 0x5555555555555555ULL) << 1);
  b = ((b >> 2) & 0x3333333333333333ULL) | ((b & 0x3333333333333333ULL) << 2);
  b = ((b >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((b & 0x0F0F0F0F0F0F0F0FULL) << 4);
  return b;
}

}  // namespace cz
