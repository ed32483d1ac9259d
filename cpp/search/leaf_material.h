// Search layer: the material count of a leaf, optionally resolved by a
// captures-only quiescence search, as a value the tree can blend into the
// network's (SearchOptions::leaf_material: a diagnostic that evaluation
// probes set, in no preset; weight 0, the paper's search, is off).
//
// quiescent_material(pos, depth) is the material balance (P 1, N 3, B 3,
// R 5, Q 9 pawns) of the side to move after the best sequence of at most
// `depth` captures and queen promotions for both sides, each side free to
// stop (stand pat) at any point; depth 0 is the static count. Checks are
// not searched (a side in check may stand pat too): it resolves pieces left
// en prise and simple exchanges, not mates.
#pragma once

#include "core/position.h"

namespace cz {

constexpr int kMaxLeafMaterialDepth = 16;

// Material of the side to move minus the opponent's, in pawns.
int material_balance(const Position& pos);
// As above after a captures-only quiescence search of at most `depth` plies
// (0..kMaxLeafMaterialDepth); alpha-beta with captures ordered most
// valuable victim first.
int quiescent_material(const Position& pos, int depth);

}  // namespace cz
