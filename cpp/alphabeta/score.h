// Alpha-beta layer: scores (centipawns from the side to move's view), mate
// scores by distance from the root, and their transposition-table form.
//
// A mate found `ply` plies below the root scores kMate - ply (we mate) or
// -(kMate - ply) (we are mated), so a shorter mate scores higher. The table
// stores mate scores relative to the node they were found at (to_tt) and
// converts them back at the probing node's ply (from_tt).
#pragma once

#include <cstdint>

namespace cz::ab {

constexpr int kMaxPly = 128;         // deepest ply of one search line (arrays are this long)
constexpr int kMaxDepth = 100;       // deepest iteration of iterative deepening
constexpr int kMate = 32000;         // mate at the root itself
constexpr int kInfinite = 32001;     // outside every real score
constexpr int kNoScore = 32002;      // "no value" (e.g. the static eval of a node in check)
constexpr int kMateInMaxPly = kMate - kMaxPly;  // every score at least this is a mate
constexpr int kDraw = 0;
// Iterations past a mate's length after which a limited search stops deepening.
constexpr int kMateSpareDepth = 4;

constexpr int mate_in(int ply) { return kMate - ply; }     // we mate `ply` plies from the root
constexpr int mated_in(int ply) { return -kMate + ply; }   // we are mated `ply` plies from the root
constexpr bool is_mate_score(int s) { return s >= kMateInMaxPly || s <= -kMateInMaxPly; }

// Full moves to mate from the root: positive when the side to move mates,
// negative when it is mated (a root in checkmate is 0).
constexpr int mate_moves(int score) {
  return score > 0 ? (kMate - score + 1) / 2 : -(kMate + score) / 2;
}

// Score as stored in the table: mate scores counted from the storing node.
constexpr int to_tt(int s, int ply) {
  return s >= kMateInMaxPly ? s + ply : s <= -kMateInMaxPly ? s - ply : s;
}
// The inverse, at the probing node's ply.
constexpr int from_tt(int s, int ply) {
  return s >= kMateInMaxPly ? s - ply : s <= -kMateInMaxPly ? s + ply : s;
}

// Bounds of a stored score.
enum Bound : uint8_t { BOUND_NONE = 0, BOUND_UPPER = 1, BOUND_LOWER = 2, BOUND_EXACT = 3 };

}  // namespace cz::ab
