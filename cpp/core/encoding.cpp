// The network contract: input planes (SPEC 2), actions (SPEC 3), reflection.
#include "core/encoding.h"

#include <algorithm>
#include <cstring>

namespace cz {

namespace {

constexpr Bitboard kCheckerboard = 0x55AA55AA55AA55AAULL;  // (row + col) odd

struct ActionTables {
  ActionInfo info[kNumActions];
  int16_t from_to[64][64];     // non-promotion action of a canonical (from, to), or -1
  int16_t promo[8][3][4];      // [from col][col offset + 1][Q,R,B,N] -> action
  int16_t mirror[kNumActions];
  constexpr ActionTables() : info{}, from_to{}, promo{}, mirror{} {
    for (auto& row : from_to)
      for (auto& a : row) a = -1;
    for (auto& col : promo)
      for (auto& off : col)
        for (auto& a : off) a = -1;
    constexpr int kRays[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1},
                                 {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    constexpr int kKnight[8][2] = {{2, 1}, {1, 2}, {-1, 2}, {-2, 1},
                                   {-2, -1}, {-1, -2}, {1, -2}, {2, -1}};
    constexpr PieceType kPromo[4] = {QUEEN, ROOK, BISHOP, KNIGHT};
    int n = 0;
    auto on_board = [](int r, int c) { return r >= 0 && r < 8 && c >= 0 && c < 8; };
    for (int from = 0; from < 64; ++from) {
      int r = from / 8, c = from % 8;
      for (const auto& d : kRays) {
        for (int dist = 1; dist <= 7; ++dist) {
          int rr = r + d[0] * dist, cc = c + d[1] * dist;
          if (!on_board(rr, cc)) break;
          info[n] = {from, rr * 8 + cc, -1};
          from_to[from][rr * 8 + cc] = int16_t(n++);
        }
      }
      for (const auto& d : kKnight) {
        int rr = r + d[0], cc = c + d[1];
        if (!on_board(rr, cc)) continue;
        info[n] = {from, rr * 8 + cc, -1};
        from_to[from][rr * 8 + cc] = int16_t(n++);
      }
      if (r == 6) {
        for (int off = -1; off <= 1; ++off) {
          if (!on_board(7, c + off)) continue;
          for (int p = 0; p < 4; ++p) {
            info[n] = {from, 56 + c + off, int(kPromo[p])};
            promo[c][off + 1][p] = int16_t(n++);
          }
        }
      }
    }
    // n == kNumActions is checked by the tests through the bindings.
    for (int a = 0; a < kNumActions; ++a) {
      const ActionInfo& i = info[a];
      int mf = i.from ^ 7, mt = i.to ^ 7;
      if (i.promo < 0) {
        mirror[a] = from_to[mf][mt];
      } else {
        int off = (mt % 8) - (mf % 8);
        int p = i.promo == QUEEN ? 0 : i.promo == ROOK ? 1 : i.promo == BISHOP ? 2 : 3;
        mirror[a] = promo[mf % 8][off + 1][p];
      }
    }
  }
};

constexpr ActionTables kActions{};

inline Square canon(Square s, Color stm) { return stm == WHITE ? s : s ^ 56; }
inline Bitboard canon_bb(Bitboard b, Color stm) { return stm == WHITE ? b : flip_ranks(b); }

bool opposite_bishops(const Position& pos) {
  Bitboard wb = pos.pieces(WHITE, BISHOP), bbish = pos.pieces(BLACK, BISHOP);
  if (popcount(wb) != 1 || popcount(bbish) != 1) return false;
  return bool(wb & DARK_SQUARES) != bool(bbish & DARK_SQUARES);
}

}  // namespace

namespace {

// The input planes in their packed form: the one place that decides what
// each plane holds. The packed row and the float planes are two ways of
// writing this struct out, so they cannot disagree.
struct PlaneSet {
  Bitboard bits[kNumBinaryPlanes];  // planes 0-39, bit = row*8+col (canonical)
  int8_t scalars[kNumScalarPlanes];  // planes 40-51
};
static_assert(sizeof(PlaneSet::bits) + sizeof(PlaneSet::scalars) == kPackedBytes);

void build_planes(const Position& pos, const EncodeContext& ctx, PlaneSet& out) {
  const Color us = pos.side_to_move(), them = ~us;
  Bitboard* planes = out.bits;
  for (int t = 0; t < 6; ++t) {
    planes[t] = canon_bb(pos.pieces(us, PieceType(t)), us);
    planes[6 + t] = canon_bb(pos.pieces(them, PieceType(t)), us);
  }
  const int cr = pos.castling_rights();
  const int own_oo = us == WHITE ? WHITE_OO : BLACK_OO, own_ooo = us == WHITE ? WHITE_OOO : BLACK_OOO;
  const int opp_oo = us == WHITE ? BLACK_OO : WHITE_OO, opp_ooo = us == WHITE ? BLACK_OOO : WHITE_OOO;
  const Bitboard full = ~Bitboard(0);
  planes[12] = (cr & own_oo) ? full : 0;
  planes[13] = (cr & own_ooo) ? full : 0;
  planes[14] = (cr & opp_oo) ? full : 0;
  planes[15] = (cr & opp_ooo) ? full : 0;
  planes[16] = canon_bb(pos.pieces(us), us);
  planes[17] = canon_bb(pos.pieces(them), us);
  planes[18] = canon_bb(pos.checkers(), us);
  planes[19] = pos.ep_square() == NO_SQUARE ? 0 : bb(canon(pos.ep_square(), us));
  planes[20] = ctx.repetitions >= 1 ? full : 0;
  planes[21] = ctx.repetitions >= 2 ? full : 0;
  const int n = std::min(ctx.num_recent, kHistoryMoves);
  for (int k = 0; k < kHistoryMoves; ++k) {
    if (k < n) {
      Move m = ctx.recent[k];
      planes[22 + 2 * k] = bb(canon(m.from(), us));
      planes[23 + 2 * k] = bb(canon(Position::real_to(m), us));
    } else {
      planes[22 + 2 * k] = planes[23 + 2 * k] = 0;
    }
  }
  planes[38] = kCheckerboard;
  planes[39] = opposite_bishops(pos) ? full : 0;

  int8_t* scalars = out.scalars;
  for (int t = 0; t < 6; ++t)
    scalars[t] = t == KING ? 0
                           : int8_t(popcount(pos.pieces(us, PieceType(t))) -
                                    popcount(pos.pieces(them, PieceType(t))));
  scalars[6] = int8_t(std::min(pos.halfmove_clock(), 100));
  for (int t = 0; t < 5; ++t) scalars[7 + t] = int8_t(popcount(pos.pieces(us, PieceType(t))));
}

// Byte -> 8 floats (bit i -> column i), for planes with many set squares.
struct ByteTable {
  alignas(32) float rows[256][8] = {};
  constexpr ByteTable() {
    for (int b = 0; b < 256; ++b)
      for (int i = 0; i < 8; ++i) rows[b][i] = float((b >> i) & 1);
  }
};
constexpr ByteTable kByteRows{};

// Fills 64 floats with `v` in 16-byte stores (a memset of this size compiles
// to `rep stos`, several times slower for short runs on some x86 cores).
inline void fill_plane(float* out, float v) {
  using F4 = float __attribute__((vector_size(16)));
  const F4 x = {v, v, v, v};
  for (int i = 0; i < 16; ++i) std::memcpy(out + 4 * i, &x, sizeof(x));
}

// One binary plane as 64 floats. Most planes are empty, full or hold a few
// squares: a fill plus a few stores; dense planes (occupancy, the
// checkerboard) go through the row table.
inline void write_plane(Bitboard b, float* out) {
  if (b == ~Bitboard(0)) {
    fill_plane(out, 1.0f);
  } else if (popcount(b) > 12) {
    for (int r = 0; r < 8; ++r) std::memcpy(out + 8 * r, kByteRows.rows[(b >> (8 * r)) & 0xFF], 32);
  } else {
    fill_plane(out, 0.0f);
    while (b) out[pop_lsb(b)] = 1.0f;
  }
}

void write_floats(const PlaneSet& set, float* out) {
  for (int p = 0; p < kNumBinaryPlanes; ++p) write_plane(set.bits[p], out + p * 64);
  for (int i = 0; i < kNumScalarPlanes; ++i)
    fill_plane(out + (kNumBinaryPlanes + i) * 64, float(set.scalars[i]));
}

}  // namespace

// Packed row: the bitboards as little-endian uint64 (x86-64, aarch64), then the scalars.
void encode_packed(const Position& pos, const EncodeContext& ctx, uint8_t* out) {
  PlaneSet set;
  build_planes(pos, ctx, set);
  std::memcpy(out, set.bits, sizeof(set.bits));
  std::memcpy(out + sizeof(set.bits), set.scalars, sizeof(set.scalars));
}

void encode_planes(const Position& pos, const EncodeContext& ctx, float* out) {
  PlaneSet set;
  build_planes(pos, ctx, set);
  write_floats(set, out);
}

void unpack_planes(const uint8_t* packed, float* out) {
  PlaneSet set;
  std::memcpy(set.bits, packed, sizeof(set.bits));
  std::memcpy(set.scalars, packed + sizeof(set.bits), sizeof(set.scalars));
  write_floats(set, out);
}

namespace {
EncodeContext game_context(const Game& game, Move* buffer) {
  EncodeContext ctx;
  ctx.recent = buffer;
  ctx.num_recent = game.recent_moves(buffer, kHistoryMoves);
  ctx.repetitions = game.repetitions();
  return ctx;
}
}  // namespace

void encode_game_packed(const Game& game, uint8_t* out) {
  Move buffer[kHistoryMoves];
  encode_packed(game.position(), game_context(game, buffer), out);
}

void encode_game_planes(const Game& game, float* out) {
  Move buffer[kHistoryMoves];
  encode_planes(game.position(), game_context(game, buffer), out);
}

ActionInfo action_info(int action) { return kActions.info[action]; }

namespace {
inline int action_index(Color us, Move m) {
  const Square from = canon(m.from(), us), to = canon(m.to(), us);
  if (m.kind() == PROMOTION) {
    int off = (to % 8) - (from % 8);
    if (from / 8 != 6 || to / 8 != 7 || off < -1 || off > 1) return -1;
    PieceType p = m.promotion();
    int idx = p == QUEEN ? 0 : p == ROOK ? 1 : p == BISHOP ? 2 : 3;
    return kActions.promo[from % 8][off + 1][idx];
  }
  return kActions.from_to[from][to];
}
}  // namespace

int action_of(const Position& pos, Move m) { return action_index(pos.side_to_move(), m); }

void actions_of(const Position& pos, const Move* moves, int n, int* out) {
  const Color us = pos.side_to_move();
  for (int i = 0; i < n; ++i) out[i] = action_index(us, moves[i]);
}

Move move_of(const Position& pos, int action) {
  if (action < 0 || action >= kNumActions) return MOVE_NONE;
  MoveList list;
  pos.legal_moves(list);
  for (Move m : list)
    if (action_of(pos, m) == action) return m;
  return MOVE_NONE;
}

int legal_actions(const Position& pos, int* out) {
  MoveList list;
  pos.legal_moves(list);
  actions_of(pos, list.moves, list.size, out);
  return list.size;
}

int mirror_action(int action) { return kActions.mirror[action]; }

void mirror_planes(float* planes) {
  for (int p = 0; p < kNumPlanes; ++p) {
    if (p == 38) continue;
    float* plane = planes + p * 64;
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 4; ++c) std::swap(plane[r * 8 + c], plane[r * 8 + 7 - c]);
  }
  for (int a : {12, 14})
    for (int s = 0; s < 64; ++s) std::swap(planes[a * 64 + s], planes[(a + 1) * 64 + s]);
}

void mirror_packed(uint8_t* packed) {
  uint64_t b[kNumBinaryPlanes];
  std::memcpy(b, packed, sizeof(b));
  for (int p = 0; p < kNumBinaryPlanes; ++p)
    if (p != 38) b[p] = mirror_files(b[p]);
  std::swap(b[12], b[13]);
  std::swap(b[14], b[15]);
  std::memcpy(packed, b, sizeof(b));
}

}  // namespace cz
