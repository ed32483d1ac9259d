// The control evaluator: material and piece-square tables (control_eval.h).
//
// The tables are written as formulas of a square's rank and its distance
// from the centre, from White's side; Black's are the same tables with the
// ranks mirrored and the sign flipped, so the evaluation is colour-symmetric
// by construction (and left-right symmetric). The values are plain chess
// knowledge, not tuned: advance and centralise pawns, centralise knights and
// bishops, rooks on the seventh, a sheltered king in the middlegame and a
// central king in the endgame.
#include "alphabeta/control_eval.h"

#include <algorithm>
#include <array>
#include <cassert>

namespace cz::ab {

namespace {

struct Pair {
  int mg = 0, eg = 0;
};

// Material (middlegame, endgame) by piece type P, N, B, R, Q, K.
constexpr Pair kMaterial[6] = {{100, 125}, {320, 290}, {335, 305}, {480, 530}, {960, 960}, {0, 0}};
// Game phase per piece type: 24 with every piece on the board (the middlegame).
constexpr int kPhaseWeight[6] = {0, 1, 1, 2, 4, 0};
constexpr int kFullPhase = 24;

constexpr int kPawnRankMg[8] = {0, 0, 3, 8, 16, 30, 55, 0};
constexpr int kPawnRankEg[8] = {0, 0, 5, 15, 30, 55, 90, 0};

constexpr int edge_distance(int x) { return x < 4 ? 3 - x : x - 4; }  // 0 (centre) .. 3 (edge)

// Piece-square value of a White piece of type t on square s (material included).
constexpr Pair white_value(PieceType t, Square s) {
  const int f = file_of(s), r = rank_of(s);
  const int fd = edge_distance(f), rd = edge_distance(r);
  const int cd = fd + rd;  // 0 (d4, e4, d5, e5) .. 6 (corners)
  Pair v = kMaterial[t];
  switch (t) {
    case PAWN:
      v.mg += kPawnRankMg[r] + (fd == 0 && (r == 3 || r == 4) ? 12 : 0) - (fd == 0 && r == 1 ? 8 : 0);
      v.eg += kPawnRankEg[r];
      break;
    case KNIGHT:
      v.mg += 12 - 8 * cd;
      v.eg += 10 - 6 * cd;
      break;
    case BISHOP:
      v.mg += 8 - 4 * cd - (r == 0 ? 10 : 0);
      v.eg += 5 - 3 * cd;
      break;
    case ROOK:
      v.mg += (r == 6 ? 15 : 0) + (fd == 0 ? 5 : 0);
      v.eg += r == 6 ? 10 : 0;
      break;
    case QUEEN:
      v.mg += 2 - 2 * cd;
      v.eg += 10 - 4 * cd;
      break;
    case KING:
      v.mg += (r == 0 ? 0 : r == 1 ? -15 : -40 - 10 * (r - 2)) + (fd == 0 || fd == 1 ? -5 : 15);
      v.eg += 20 - 10 * cd;
      break;
    default:
      break;
  }
  return v;
}

// [piece][square]: White's point of view (Black's entries are negative).
using Table = std::array<std::array<Pair, 64>, 16>;
constexpr Table make_table() {
  Table t{};
  for (int pt = PAWN; pt <= KING; ++pt) {
    for (Square s = 0; s < 64; ++s) {
      Pair w = white_value(PieceType(pt), s);
      t[make_piece(WHITE, PieceType(pt))][s] = w;
      t[make_piece(BLACK, PieceType(pt))][s ^ 56] = {-w.mg, -w.eg};
    }
  }
  return t;
}
constexpr Table kPsq = make_table();

int taper(const ControlStack::Acc& a, Color stm) {
  const int ph = std::min(a.phase, kFullPhase);
  // Division truncates toward zero, so a mirrored position gives exactly -v.
  const int v = (a.mg * ph + a.eg * (kFullPhase - ph)) / kFullPhase;
  return stm == WHITE ? v : -v;
}

}  // namespace

ControlStack::Acc ControlStack::accumulate(const Position& pos) {
  Acc a;
  for (Bitboard b = pos.pieces(); b;) {
    const Square s = pop_lsb(b);
    const Piece p = pos.piece_on(s);
    a.mg += kPsq[p][s].mg;
    a.eg += kPsq[p][s].eg;
    a.phase += kPhaseWeight[type_of(p)];
  }
  return a;
}

int control_evaluate(const Position& pos) { return taper(ControlStack::accumulate(pos), pos.side_to_move()); }

void ControlStack::reset(const Position& root) {
  top_ = 0;
  stack_[0] = accumulate(root);
}

void ControlStack::push(const Position& pos, Move m) {
  assert(top_ + 1 < int(std::size(stack_)));
  Acc a = stack_[top_];
  auto add = [&a](Piece p, Square s) {
    a.mg += kPsq[p][s].mg;
    a.eg += kPsq[p][s].eg;
    a.phase += kPhaseWeight[type_of(p)];
  };
  auto sub = [&a](Piece p, Square s) {
    a.mg -= kPsq[p][s].mg;
    a.eg -= kPsq[p][s].eg;
    a.phase -= kPhaseWeight[type_of(p)];
  };
  const Square from = m.from(), to = m.to();
  const Piece moved = pos.piece_on(from);
  const Piece captured = pos.piece_on(to);
  switch (m.kind()) {
    case CASTLING: {  // king origin -> own rook origin
      const int r = rank_of(from);
      const bool king_side = to > from;
      sub(moved, from);
      sub(captured, to);  // the rook
      add(moved, make_square(king_side ? 6 : 2, r));
      add(captured, make_square(king_side ? 5 : 3, r));
      break;
    }
    case EN_PASSANT: {
      const Square victim = to + (color_of(moved) == WHITE ? -8 : 8);
      sub(pos.piece_on(victim), victim);
      sub(moved, from);
      add(moved, to);
      break;
    }
    case PROMOTION:
      if (captured != NO_PIECE) sub(captured, to);
      sub(moved, from);
      add(make_piece(color_of(moved), m.promotion()), to);
      break;
    default:
      if (captured != NO_PIECE) sub(captured, to);
      sub(moved, from);
      add(moved, to);
  }
  stack_[++top_] = a;
}

void ControlStack::push_null() {
  assert(top_ + 1 < int(std::size(stack_)));
  stack_[top_ + 1] = stack_[top_];
  ++top_;
}

int ControlStack::evaluate(const Position& pos) const {
  assert(stack_[top_] == accumulate(pos));
  return taper(stack_[top_], pos.side_to_move());
}

}  // namespace cz::ab
