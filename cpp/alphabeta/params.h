// Alpha-beta layer: the search's options (DESIGN 3: an options struct with
// defaults and a comment per field, rather than numbers inline in the search)
// and the limits of one search.
#pragma once

#include <cstdint>

namespace cz::ab {

struct SearchParams {
  // Aspiration windows: from this iteration on, the window is the previous
  // score +- delta, widened by half again after each fail.
  int aspiration_min_depth = 4;
  int aspiration_delta = 20;
  // Reverse futility pruning: at depth <= max_depth, a non-PV node whose
  // static eval beats beta by margin * depth (one depth less when improving)
  // returns the eval.
  int rfp_max_depth = 7;
  int rfp_margin = 80;
  // Null-move pruning: at depth >= min_depth, reduction
  // base + depth / depth_div + min((eval - beta) / eval_div, eval_max).
  int nmp_min_depth = 3;
  int nmp_base = 3;
  int nmp_depth_div = 4;
  int nmp_eval_div = 200;
  int nmp_eval_max = 3;
  // Late-move reductions of quiet moves: reduction base + ln(depth) ln(move) / div,
  // at depth >= min_depth, after the first (non-PV) or third (PV) move.
  int lmr_min_depth = 3;
  double lmr_base = 0.75;
  double lmr_div = 2.25;
  // A quiet move's history shifts its reduction by history / this.
  int lmr_history_div = 8192;
  // Late-move pruning: at depth <= max_depth, quiet moves after the
  // (3 + depth^2) / (2 - improving)-th are not searched.
  int lmp_max_depth = 8;
  // Futility pruning: at depth <= max_depth, quiet moves are skipped when the
  // static eval + base + per_depth * depth cannot reach alpha.
  int futility_max_depth = 6;
  int futility_base = 100;
  int futility_per_depth = 100;
  // SEE pruning in the main search: at depth <= max_depth, captures losing
  // more than margin * depth^2 are skipped.
  int see_prune_max_depth = 6;
  int see_prune_margin = 20;
  // Quiescence delta pruning: a capture that, with this margin, cannot lift
  // the stand-pat score to alpha is skipped.
  int qs_delta_margin = 200;
  // Internal iterative reduction: a node at depth >= this without a table
  // move is searched one ply shallower.
  int iir_min_depth = 4;
  // History bonus of a quiet cutoff move (malus of the quiets before it):
  // min(mul * depth^2, max).
  int history_bonus_mul = 16;
  int history_bonus_max = 1600;
  // A move that gives check is searched one ply deeper.
  bool check_extension = true;
};

// When a search stops. 0 / false: no limit of that kind. With none given the
// search runs until stop() or the deepest iteration (kMaxDepth).
struct Limits {
  int depth = 0;            // iterations (plies)
  uint64_t nodes = 0;       // positions visited, main search and quiescence
  int64_t movetime_ms = 0;  // wall-clock budget
  bool infinite = false;    // only stop() (or another given limit) ends it
};

}  // namespace cz::ab
