// Attack tables: leapers by direct enumeration, sliders by "fancy" magic
// bitboards whose magics are found at start-up with a fixed-seed generator.
#include "core/bitboard.h"

#include <mutex>

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

constexpr int kRookDirs[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
constexpr int kBishopDirs[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

Bitboard slide(Square s, Bitboard occ, const int (*dirs)[2]) {
  Bitboard result = 0;
  for (int d = 0; d < 4; ++d) {
    int f = file_of(s) + dirs[d][0], r = rank_of(s) + dirs[d][1];
    while (f >= 0 && f < 8 && r >= 0 && r < 8) {
      Square t = make_square(f, r);
      result |= bb(t);
      if (occ & bb(t)) break;
      f += dirs[d][0];
      r += dirs[d][1];
    }
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

// xorshift64* generator: deterministic magics on every platform.
struct Prng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ULL;
  }
  uint64_t sparse() { return next() & next() & next(); }
};

void init_magics(Magic* magics, Bitboard* table, const int (*dirs)[2]) {
  Bitboard occupancy[4096], reference[4096];
  int epoch[4096] = {0}, attempt = 0;
  Prng rng{0x2545F4914F6CDD1DULL};
  Bitboard* next_table = table;
  for (Square s = 0; s < 64; ++s) {
    Bitboard edges = ((rank_bb(0) | rank_bb(7)) & ~rank_bb(rank_of(s))) |
                     ((file_bb(0) | file_bb(7)) & ~file_bb(file_of(s)));
    Magic& m = magics[s];
    m.mask = slide(s, 0, dirs) & ~edges;
    m.shift = 64 - popcount(m.mask);
    m.attacks = next_table;
    int size = 0;
    Bitboard b = 0;
    do {  // Carry-Rippler enumeration of all subsets of the mask.
      occupancy[size] = b;
      reference[size] = slide(s, b, dirs);
      ++size;
      b = (b - m.mask) & m.mask;
    } while (b);
    next_table += size;
    for (int i = 0; i < size;) {
      for (m.magic = 0; popcount((m.magic * m.mask) >> 56) < 6;) m.magic = rng.sparse();
      ++attempt;
      for (i = 0; i < size; ++i) {
        unsigned idx = m.index(occupancy[i]);
        if (epoch[idx] < attempt) {
          epoch[idx] = attempt;
          m.attacks[idx] = reference[i];
        } else if (m.attacks[idx] != reference[i]) {
          break;
        }
      }
    }
  }
}

void init_all() {
  constexpr int kKnight[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2},
                                 {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
  constexpr int kKing[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1},
                               {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
  constexpr int kWhitePawn[2][2] = {{-1, 1}, {1, 1}};
  constexpr int kBlackPawn[2][2] = {{-1, -1}, {1, -1}};
  for (Square s = 0; s < 64; ++s) {
    tables::knight[s] = leaper(s, kKnight, 8);
    tables::king[s] = leaper(s, kKing, 8);
    tables::pawn[WHITE][s] = leaper(s, kWhitePawn, 2);
    tables::pawn[BLACK][s] = leaper(s, kBlackPawn, 2);
  }
  init_magics(tables::rook_magic, rook_table, kRookDirs);
  init_magics(tables::bishop_magic, bishop_table, kBishopDirs);
  for (Square a = 0; a < 64; ++a) {
    for (Square b = 0; b < 64; ++b) {
      tables::between[a][b] = tables::line[a][b] = 0;
      if (a == b) continue;
      if (slide(a, 0, kRookDirs) & bb(b)) {
        tables::line[a][b] = (slide(a, 0, kRookDirs) & slide(b, 0, kRookDirs)) | bb(a) | bb(b);
        tables::between[a][b] = slide(a, bb(b), kRookDirs) & slide(b, bb(a), kRookDirs);
      } else if (slide(a, 0, kBishopDirs) & bb(b)) {
        tables::line[a][b] =
            (slide(a, 0, kBishopDirs) & slide(b, 0, kBishopDirs)) | bb(a) | bb(b);
        tables::between[a][b] = slide(a, bb(b), kBishopDirs) & slide(b, bb(a), kBishopDirs);
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
