// Static exchange evaluation with a threshold (see.h).
//
// The exchange is resolved with one running number, `swap`: at each step the
// side to recapture asks whether taking with its least valuable attacker can
// still lift its balance to the threshold; `res` flips with each capture
// and records who is ahead when the sequence stops.
#include "alphabeta/see.h"

namespace cz::ab {

bool see_ge(const Position& pos, Move m, int threshold) {
  if (m.kind() == CASTLING) return 0 >= threshold;
  const Square from = m.from(), to = m.to();
  const Color us = pos.side_to_move();

  // What the first capture wins, and what then stands on `to` to be taken.
  int gain = captured_value(pos, m);
  int on_square = kSeeValue[type_of(pos.piece_on(from))];
  if (m.kind() == PROMOTION) {
    gain += kSeeValue[m.promotion()] - kSeeValue[PAWN];
    on_square = kSeeValue[m.promotion()];
  }
  int swap = gain - threshold;
  if (swap < 0) return false;  // even unanswered, the capture does not reach the threshold
  swap = on_square - swap;
  if (swap <= 0) return true;  // even losing the capturer, it does

  Bitboard occ = pos.pieces() ^ bb(from) ^ bb(to);
  if (m.kind() == EN_PASSANT) occ ^= bb(to + (us == WHITE ? -8 : 8));
  const Bitboard diagonal = pos.pieces(BISHOP) | pos.pieces(QUEEN);
  const Bitboard straight = pos.pieces(ROOK) | pos.pieces(QUEEN);
  Bitboard attackers = pos.attackers_to(to, occ);
  Color side = us;
  int res = 1;
  while (true) {
    side = ~side;
    attackers &= occ;
    const Bitboard mine = attackers & pos.pieces(side);
    if (!mine) break;
    res ^= 1;
    Bitboard b;
    if ((b = mine & pos.pieces(PAWN))) {
      if ((swap = kSeeValue[PAWN] - swap) < res) break;
      occ ^= bb(lsb(b));
      attackers |= bishop_attacks(to, occ) & diagonal;
    } else if ((b = mine & pos.pieces(KNIGHT))) {
      if ((swap = kSeeValue[KNIGHT] - swap) < res) break;
      occ ^= bb(lsb(b));
    } else if ((b = mine & pos.pieces(BISHOP))) {
      if ((swap = kSeeValue[BISHOP] - swap) < res) break;
      occ ^= bb(lsb(b));
      attackers |= bishop_attacks(to, occ) & diagonal;
    } else if ((b = mine & pos.pieces(ROOK))) {
      if ((swap = kSeeValue[ROOK] - swap) < res) break;
      occ ^= bb(lsb(b));
      attackers |= rook_attacks(to, occ) & straight;
    } else if ((b = mine & pos.pieces(QUEEN))) {
      if ((swap = kSeeValue[QUEEN] - swap) < res) break;
      occ ^= bb(lsb(b));
      attackers |= (bishop_attacks(to, occ) & diagonal) | (rook_attacks(to, occ) & straight);
    } else {
      // Only the king is left: it may capture only if nothing defends the square.
      return (attackers & ~pos.pieces(side)) ? res ^ 1 : res;
    }
  }
  return res != 0;
}

}  // namespace cz::ab
