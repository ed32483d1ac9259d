// The input features and a move's board changes (see features.h).
#include "nnue/features.h"

#include <cassert>

namespace cz::nnue {

int active_features(const Position& pos, Color perspective, int* out) {
  int n = 0;
  for (Bitboard b = pos.pieces(); b;) {
    Square s = pop_lsb(b);
    out[n++] = feature_index(perspective, pos.piece_on(s), s);
  }
  assert(n <= kMaxActive);
  return n;
}

int DirtyPieces::removed_features(Color perspective, int* out) const {
  for (int i = 0; i < num_removed; ++i) out[i] = feature_index(perspective, removed[i].piece, removed[i].square);
  return num_removed;
}

int DirtyPieces::added_features(Color perspective, int* out) const {
  for (int i = 0; i < num_added; ++i) out[i] = feature_index(perspective, added[i].piece, added[i].square);
  return num_added;
}

DirtyPieces dirty_pieces(const Position& before, Move m) {
  DirtyPieces d;
  auto remove = [&](Piece p, Square s) { d.removed[d.num_removed++] = {p, uint8_t(s)}; };
  auto add = [&](Piece p, Square s) { d.added[d.num_added++] = {p, uint8_t(s)}; };
  const Color us = before.side_to_move();
  const Square from = m.from(), to = m.to();
  const Piece mover = before.piece_on(from);
  assert(mover != NO_PIECE && color_of(mover) == us);

  switch (m.kind()) {
    case CASTLING: {  // encoded king origin -> own rook origin
      const Piece rook = before.piece_on(to);
      const Square king_to = Position::real_to(m);
      const Square rook_to = make_square(to > from ? 5 : 3, rank_of(from));
      remove(mover, from);
      remove(rook, to);
      add(mover, king_to);
      add(rook, rook_to);
      break;
    }
    case EN_PASSANT: {
      const Square victim = to + (us == WHITE ? -8 : 8);
      remove(mover, from);
      remove(before.piece_on(victim), victim);
      add(mover, to);
      break;
    }
    case PROMOTION:
    case NORMAL: {
      remove(mover, from);
      if (before.piece_on(to) != NO_PIECE) remove(before.piece_on(to), to);
      add(m.kind() == PROMOTION ? make_piece(us, m.promotion()) : mover, to);
      break;
    }
  }
  return d;
}

}  // namespace cz::nnue
