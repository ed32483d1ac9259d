// Layer 5 (search): the options of one search tree and of move choice.
// Defaults are the self-play values of SPEC 6; `evaluation()` gives the
// evaluation preset (c = 1.0, no noise, no forced playouts, most visits).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cz {

// How the root spends its visits (below the root it is always PUCT).
enum class RootRule : int {
  PUCT = 0,    // PUCT at the root too (SPEC 6), visit counts as the policy target
  GUMBEL = 1,  // Gumbel top-m sampling + sequential halving (search/gumbel.h)
};

struct SearchOptions {
  // PUCT exploration constant c in Q + c * P * sqrt(max(1, N)) / (1 + N_a).
  float c_puct = 1.5f;
  // First-play urgency: an unvisited child's Q is the parent's value minus this.
  float fpu_reduction = 0.2f;
  // Weight of the root Dirichlet noise in the root prior (0 disables noise).
  float dirichlet_epsilon = 0.25f;
  // Concentration of the root Dirichlet noise.
  float dirichlet_alpha = 0.3f;
  // Forced playouts: a root child is forced while N < sqrt(k * P * N_root);
  // the same k bounds how many visits the policy-target pruning removes (0 = off).
  float forced_playout_k = 1.5f;
  // Factor applied to a backed-up value for every ply it travels up.
  float discount = 0.99f;
  // Share of visit statistics kept when the played child becomes the root.
  float subtree_retention = 0.6f;
  // Traversals one tree may have waiting for the network at once.
  int leaves_per_tree = 1;
  // Value counted as a loss for each in-flight traversal through a child.
  float virtual_loss = 1.0f;
  // Proven results (MCTS-solver): the children of a node that end the game
  // are recognised when the node is expanded; proven wins, losses and draws
  // propagate up the tree; a traversal that reaches a proven node backs its
  // exact value up at once; the root prefers the shortest proven win, avoids
  // proven losses, and a search ends as soon as its root is proven.
  bool proven_results = true;
  // Inside the tree (never at the root) a position that repeats one of the
  // game since the last irreversible move, or of the search path, is a draw;
  // the game itself still ends only at threefold repetition.
  bool twofold_draws = true;
  // Draws are worth -draw_score to the side that is ahead at the root (root
  // value > 0 when the search begins) and +draw_score to the other side, at
  // every node of that search (0: draws are worth 0 to both).
  float draw_score = 0.0f;
  // Root rule. With GUMBEL, `visits` given to begin_search counts this
  // search's simulations (visits retained by subtree reuse are extra and
  // never enter the halving schedule); Dirichlet noise and forced playouts
  // are unused, the noise flag draws the Gumbel noise instead (off: g = 0),
  // and the policy target is the completed-Q improved policy.
  RootRule root = RootRule::PUCT;
  // Gumbel root: moves considered (m = min(this, simulations, legal moves)).
  int gumbel_considered = 16;
  // sigma(q) = (gumbel_c_visit + max_b N(b)) * gumbel_c_scale * q, q min-max normalised.
  float gumbel_c_visit = 50.0f;
  float gumbel_c_scale = 1.0f;
  // Moves-left utility (SPEC 6, "a moves-left preference from the length
  // head"; Lc0's rule): with moves_left_slope > 0 every answer must carry the
  // network's estimate of the plies left in the game (the owner's submit
  // refuses one without), and the PUCT score of each visited, unproven child
  // gains
  //   M = -sign(q) * clamp(slope * (m_child - m_parent), -cap, cap)
  //         * (linear * |q| + quadratic * q^2)
  // where q is the child's Q from the parent's side and m the mean plies left
  // backed up through a node (puct::moves_left_utility): the side ahead
  // prefers shorter lines, the side behind longer ones, more so the clearer
  // the result. The Gumbel root's own choice does not use it (below the root
  // it applies). 0: off, and the moves-left estimates are not needed.
  float moves_left_slope = 0.0f;
  float moves_left_cap = 0.0345f;
  float moves_left_linear = 1.6521f;
  float moves_left_quadratic = -0.6521f;
  // Leaf material (not in the paper; search/leaf_material.h): the value of
  // every evaluated leaf becomes (1 - w) * (W - L) + w * tanh(m / scale),
  // m the side to move's material lead in pawns after a captures-only
  // quiescence search of leaf_material_depth plies (0: the static count).
  // w = leaf_material in [0, 1]; 0 (the default) is off.
  float leaf_material = 0.0f;
  float leaf_material_scale = 5.0f;
  int leaf_material_depth = 8;

  static SearchOptions self_play() { return SearchOptions{}; }
  static SearchOptions evaluation() {
    SearchOptions o;
    o.c_puct = 1.0f;
    o.dirichlet_epsilon = 0.0f;
    o.forced_playout_k = 0.0f;
    return o;
  }
  // Empty when valid, else a message naming the first bad field.
  std::string validate() const;
};

// How the move to play is chosen from a finished search.
enum class MoveChoice : int {
  SAMPLE = 0,       // sample from pruned visits ^ (1 / T(ply)); most visits from greedy_after_ply
  MOST_VISITS = 1,  // the most visited root child (evaluation)
  POLICY = 2,       // argmax of the network's legal prior at the root (no search needed)
};

struct MoveChoiceOptions {
  MoveChoice mode = MoveChoice::SAMPLE;
  // Piecewise-linear temperature by game ply: (ply, T) points, ply ascending;
  // constant before the first and after the last point.
  std::vector<std::pair<int, float>> temperature = {{0, 1.3f}, {60, 0.1f}};
  // From this game ply on, SAMPLE plays the most visited move.
  int greedy_after_ply = 60;

  float temperature_at(int ply) const;
  std::string validate() const;
};

}  // namespace cz
