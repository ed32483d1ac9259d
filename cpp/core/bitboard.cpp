// Attack tables: leapers by direct enumeration, sliders by "fancy" magic
// bitboards with the precomputed magics of magics.h (filling the tables
// takes about a millisecond; nothing is searched at start-up).
#include "core/bitboard.h"

#include <cassert>
#include <cstddef>
#include <mutex>

#include "core/magics.h"

namespace cz {
namespace tables {
Bitboard knight[64];
Bitboard king[64];
Bitboard pawn[2][64];
Bitboard between[64][64];
Bitboard line[64][64];
Magic rook_magic[64];
Magic bishop_magic[64];
}  // namespace tables

namespace {

Bitboard rook_table[0x19000];
Bitboard bishop_table[0x1480];

// Directions as (file, rank) steps, each next to its reverse (d ^ 1); the
// first four are the rook's.
constexpr int kDirs[8][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, 1}, {-1, -1}, {1, -1}, {-1, 1}};
constexpr int kRookDirs[4] = {0, 1, 2, 3};
constexpr int kBishopDirs[4] = {4, 5, 6, 7};

Bitboard ray[8][64];  // squares from s (exclusive) to the edge in each direction

// A direction increases the square index when it steps up a rank, or right along one.
constexpr bool increasing(int d) { return kDirs[d][1] > 0 || (kDirs[d][1] == 0 && kDirs[d][0] > 0); }

// Slider attacks from `s` along the four directions `dirs`, stopping at (and
// including) the first occupied square of each ray.
Bitboard slide(Square s, Bitboard occ, const int* dirs) {
  Bitboard result = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = dirs[i];
    Bitboard r = ray[d][s];
    if (Bitboard blockers = r & occ) {
      Square first = increasing(d) ? lsb(blockers) : 63 - std::countl_zero(blockers);
      r ^= ray[d][first];
    }
    result |= r;
  }
  return result;
}

Bitboard leaper(Square s, const int (*steps)[2], int n) {
  Bitboard result = 0;
  for (int i = 0; i < n; ++i) {
    int f = file_of(s) + steps[i][0], r = rank_of(s) + steps[i][1];
    if (f >= 0 && f < 8 && r >= 0 && r < 8) result |= bb(make_square(f, r));
  }
  return result;
}

// Fills each square's slice of `table` with the attack set of every subset
// of its mask, at the index its precomputed magic gives (magics.h).
void init_magics(Magic* magics, Bitboard* table, const Bitboard* numbers, const int* dirs) {
  Bitboard* next_table = table;
  for (Square s = 0; s < 64; ++s) {
    Bitboard edges = ((rank_bb(0) | rank_bb(7)) & ~rank_bb(rank_of(s))) |
                     ((file_bb(0) | file_bb(7)) & ~file_bb(file_of(s)));
    Magic& m = magics[s];
    m.mask = slide(s, 0, dirs) & ~edges;
    m.magic = numbers[s];
    m.shift = 64 - popcount(m.mask);
    m.attacks = next_table;
    next_table += size_t(1) << popcount(m.mask);
    Bitboard b = 0;
    do {  // Carry-Rippler enumeration of all subsets of the mask.
      const Bitboard attacks = slide(s, b, dirs);
      assert(m.attacks[m.index(b)] == 0 || m.attacks[m.index(b)] == attacks);  // a bad magic
      m.attacks[m.index(b)] = attacks;
      b = (b - m.mask) & m.mask;
    } while (b);
  }
}

void init_all() {
  constexpr int kKnight[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2},
                                 {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
  constexpr int kWhitePawn[2][2] = {{-1, 1}, {1, 1}};
  constexpr int kBlackPawn[2][2] = {{-1, -1}, {1, -1}};
  for (Square s = 0; s < 64; ++s) {
    for (int d = 0; d < 8; ++d) {
      ray[d][s] = 0;
      for (int f = file_of(s) + kDirs[d][0], r = rank_of(s) + kDirs[d][1];
           f >= 0 && f < 8 && r >= 0 && r < 8; f += kDirs[d][0], r += kDirs[d][1])
        ray[d][s] |= bb(make_square(f, r));
    }
    tables::knight[s] = leaper(s, kKnight, 8);
    tables::king[s] = leaper(s, kDirs, 8);
    tables::pawn[WHITE][s] = leaper(s, kWhitePawn, 2);
    tables::pawn[BLACK][s] = leaper(s, kBlackPawn, 2);
  }
  init_magics(tables::rook_magic, rook_table, magics::kRook, kRookDirs);
  init_magics(tables::bishop_magic, bishop_table, magics::kBishop, kBishopDirs);
  for (Square a = 0; a < 64; ++a) {
    for (Square b = 0; b < 64; ++b) tables::between[a][b] = tables::line[a][b] = 0;
    for (int d = 0; d < 8; ++d) {
      const int opposite = d ^ 1;  // kDirs pairs each direction with its reverse
      for (Bitboard r = ray[d][a]; r;) {
        const Square b = pop_lsb(r);
        tables::between[a][b] = ray[d][a] & ~ray[d][b] & ~bb(b);
        tables::line[a][b] = ray[d][a] | ray[opposite][a] | bb(a);
      }
    }
  }
}

}  // namespace

void init_bitboards() {
  static std::once_flag once;
  std::call_once(once, init_all);
}

}  // namespace cz
