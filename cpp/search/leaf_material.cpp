#include "search/leaf_material.h"

#include <algorithm>

namespace cz {
namespace {

constexpr int kPawns[6] = {1, 3, 3, 5, 9, 0};  // P, N, B, R, Q, K

int victim_value(const Position& pos, Move m) {
  if (m.kind() == EN_PASSANT) return kPawns[PAWN];
  const Piece p = pos.piece_on(m.to());
  const int captured = p == NO_PIECE || m.kind() == CASTLING ? 0 : kPawns[type_of(p)];
  return captured + (m.kind() == PROMOTION ? kPawns[QUEEN] - kPawns[PAWN] : 0);
}

int qsearch(const Position& pos, int alpha, int beta, int depth) {
  const int stand = material_balance(pos);
  if (depth == 0 || stand >= beta) return stand;
  alpha = std::max(alpha, stand);
  MoveList list;
  pos.legal_captures(list);
  int value[MoveList::kCapacity];
  for (int i = 0; i < list.size; ++i) value[i] = victim_value(pos, list.moves[i]);
  for (int i = 0; i < list.size; ++i) {
    int best = i;  // selection: the most valuable victim next
    for (int j = i + 1; j < list.size; ++j) best = value[j] > value[best] ? j : best;
    std::swap(value[i], value[best]);
    std::swap(list.moves[i], list.moves[best]);
    if (stand + value[i] <= alpha) break;  // nothing left gains enough (delta pruning)
    Position next = pos;
    next.play(list.moves[i]);
    const int score = -qsearch(next, -beta, -alpha, depth - 1);
    if (score >= beta) return score;
    alpha = std::max(alpha, score);
  }
  return alpha;
}

}  // namespace

int material_balance(const Position& pos) {
  const Color us = pos.side_to_move();
  int total = 0;
  for (int t = PAWN; t <= QUEEN; ++t) {
    const PieceType type = PieceType(t);
    total += kPawns[t] * (popcount(pos.pieces(us, type)) - popcount(pos.pieces(~us, type)));
  }
  return total;
}

int quiescent_material(const Position& pos, int depth) {
  depth = std::clamp(depth, 0, kMaxLeafMaterialDepth);
  return qsearch(pos, -1000, 1000, depth);
}

}  // namespace cz
