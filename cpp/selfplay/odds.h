// Layer 6 (self-play): material-odds start positions, a curriculum of
// lopsided games (this project's addition, ActorOptions::odds_fraction).
#pragma once

#include <string>

#include "core/position.h"
#include "search/rng.h"

namespace cz {

// Material in pawns of a FEN piece letter (P 1, N 3, B 3, R 5, Q 9; K and
// anything else 0).
int odds_piece_value(char piece);

// `pos` with pieces worth a uniform min_pawns..max_pawns taken from a side
// drawn at random (its pieces removed in a random order while they fit the
// draw; the king stays), as a FEN: castling rights that lost their king or
// rook dropped, no en-passant square, halfmove clock 0. Empty when less than
// min_pawns could be taken. The FEN is not checked for legality (a removed
// blocker can leave the side not to move in check): parse it to know.
// Material of side `c` in pawns (P 1, N 3, B 3, R 5, Q 9; the king 0).
int material_pawns(const Position& pos, Color c);

std::string odds_fen(const Position& pos, int min_pawns, int max_pawns, Rng& rng);

}  // namespace cz
