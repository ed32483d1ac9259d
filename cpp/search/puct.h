// Layer 5 (search): the PUCT selection rule (SPEC 6), written once. Tree
// selection, the root statistics and forced-playout pruning all use it:
//
//   score = Q + U,   U = cu * P / (1 + n),   cu = c_puct * sqrt(max(1, N))
//
// N: the parent's visits, n: the child's (traversals in flight included while
// selecting), P: the child's prior (Dirichlet noise mixed in at the root),
// Q: the child's value from the parent's side to move (virtual loss included;
// first-play urgency when never visited; exact when proven, see Tree).
#pragma once

#include <algorithm>
#include <cmath>

namespace cz::puct {

// cu, the exploration factor of a parent with `parent_n` visits.
inline float exploration(float c_puct, float parent_n) { return c_puct * std::sqrt(std::max(1.0f, parent_n)); }

// Q + U of a child with value `q`, prior `prior` and `n` visits.
inline float score(float q, float prior, float n, float cu) { return q + cu * prior / (1.0f + n); }

// The visits at which a child's score falls to `target` (score() solved for
// n); `otherwise` when its value alone reaches the target.
inline float visits_at_score(float target, float q, float prior, float cu, float otherwise) {
  const float gap = target - q;
  return gap > 0 ? cu * prior / gap - 1.0f : otherwise;
}

// Root prior with Dirichlet noise `noise` mixed in at weight `epsilon`.
inline float noisy_prior(float prior, float noise, float epsilon) {
  return (1.0f - epsilon) * prior + epsilon * noise;
}

// Q of an unproven child from its parent's side: its value sum `w` (own side
// to move) over `n` visits, discounted and negated, with each of `inflight`
// traversals counted as a loss of `virtual_loss`; `fpu` when it has neither.
inline float q(float w, float n, float inflight, float discount, float virtual_loss, float fpu) {
  const float nc = n + inflight;
  return nc > 0 ? (-discount * w - virtual_loss * inflight) / nc : fpu;
}

// The moves-left utility of a visited child (SearchOptions::moves_left_slope):
// `q` its Q from the parent's side, `child_m` and `parent_m` the mean plies
// left backed up through the child and the parent. Positive when the child
// shortens a line the parent wins or lengthens one it loses.
inline float moves_left_utility(float q, float child_m, float parent_m, float slope, float cap, float linear,
                                float quadratic) {
  const float m = std::clamp(slope * (child_m - parent_m), -cap, cap);
  const float aq = std::fabs(q);
  const float shape = linear * aq + quadratic * aq * aq;
  return (q > 0 ? -m : q < 0 ? m : 0.0f) * shape;
}

}  // namespace cz::puct
