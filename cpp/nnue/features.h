// NNUE layer 1: the 768 piece-square input features (docs/nnue.md section 1).
// feature_index maps (perspective, piece, square) to 0..767; active_features
// lists a position's features from one side's view; DirtyPieces is what a
// move changes on the board (at most two pieces leave, two arrive), turned
// into per-perspective feature indices by removed()/added(). Nothing here
// knows about weights: network.h and eval.h build on it.
#pragma once

#include "core/position.h"

namespace cz::nnue {

constexpr int kInputs = 768;
constexpr int kMaxActive = 32;  // at most 32 pieces on a legal board

// 384 * (colour != perspective) + 64 * type + (perspective == WHITE ? s : s ^ 56).
constexpr int feature_index(Color perspective, Piece p, Square s) {
  return 384 * (color_of(p) != perspective ? 1 : 0) + 64 * int(type_of(p)) +
         (perspective == WHITE ? s : (s ^ 56));
}

// Fills out[0..n) with the active features of `pos` from `perspective`'s
// view, in square order (a1 first), and returns n (<= kMaxActive).
int active_features(const Position& pos, Color perspective, int* out);

// The pieces a move takes off and puts on the board, removals first.
// Normal move / promotion: the mover leaves `from`, the mover (or the new
// piece) arrives on `to`, a victim on `to` leaves; en passant: the victim
// leaves the square behind `to`; castling: king and rook both move.
struct DirtyPieces {
  struct Entry {
    Piece piece;
    uint8_t square;
  };
  Entry removed[2];
  Entry added[2];
  uint8_t num_removed = 0;
  uint8_t num_added = 0;

  // Feature indices of the removed / added pieces from `perspective`'s view;
  // each returns how many it wrote (<= 2).
  int removed_features(Color perspective, int* out) const;
  int added_features(Color perspective, int* out) const;
};

// What legal move m changes on the board of `before` (the position it is played in).
DirtyPieces dirty_pieces(const Position& before, Move m);

}  // namespace cz::nnue
