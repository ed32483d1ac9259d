// Alpha-beta layer: static exchange evaluation (SEE) and the piece values
// that order captures (most valuable victim, least valuable attacker).
//
// see_ge(pos, m, t) answers "does the exchange on m's destination that m
// starts win at least t centipawns for the mover?", each side recapturing
// with its least valuable attacker and free to stop when that pays;
// x-ray attackers behind a capturer join in. Pins are not considered.
// Castling scores 0; en passant and promotions count their pawn and piece.
#pragma once

#include "core/position.h"

namespace cz::ab {

// Exchange values by piece type (P, N, B, R, Q, K); the king never gets captured.
constexpr int kSeeValue[7] = {100, 320, 330, 500, 950, 20000, 0};

inline bool is_capture(const Position& pos, Move m) {
  return m.kind() == EN_PASSANT || (m.kind() != CASTLING && pos.piece_on(m.to()) != NO_PIECE);
}
// Captures and promotions: the moves ordered and searched as "tactical".
inline bool is_tactical(const Position& pos, Move m) {
  return m.kind() == PROMOTION || is_capture(pos, m);
}
// Value of the piece m captures (a pawn for en passant, 0 for none).
inline int captured_value(const Position& pos, Move m) {
  if (m.kind() == EN_PASSANT) return kSeeValue[PAWN];
  if (m.kind() == CASTLING) return 0;
  const Piece p = pos.piece_on(m.to());
  return p == NO_PIECE ? 0 : kSeeValue[type_of(p)];
}

bool see_ge(const Position& pos, Move m, int threshold);

}  // namespace cz::ab
