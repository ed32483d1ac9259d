// What a finished search says at the root: raw visits, the pruned policy
// target (KataGo's forced-playout pruning), values, surprise, the move to
// play and the principal variation.
#include <algorithm>
#include <cmath>

#include "search/tree.h"

namespace cz {

// Index of the most visited child (ties: higher prior, then lower index).
static int most_visited(const std::vector<RootChild>& kids) {
  int best = -1;
  for (int i = 0; i < int(kids.size()); ++i) {
    if (best < 0 || kids[i].visits > kids[best].visits ||
        (kids[i].visits == kids[best].visits && kids[i].prior > kids[best].prior))
      best = i;
  }
  return best;
}

RootSummary Tree::summarize(std::vector<RootChild>& out) const {
  const Node& root = nodes_[0];
  RootSummary s;
  s.visits = root.n;
  s.value = root.value();
  s.raw_value = root.raw;
  out.clear();
  if (root.first_child == kNoNode || root.state == NodeState::TERMINAL) return s;
  for (int i = 0; i < root.num_children; ++i) {
    const Node& c = nodes_[root.first_child + i];
    RootChild k;
    k.move = Move(c.move);
    k.action = c.action;
    k.visits = c.n;
    k.target = c.n;
    k.prior = c.prior;
    k.root_prior = root_prior(i);
    k.q = child_q(root, c);
    out.push_back(k);
  }
  s.best = most_visited(out);
  const RootChild& best = out[s.best];
  s.best_q = best.q;

  // Forced-playout pruning: every child but the best loses at most its forced
  // visits sqrt(k P N), and only down to the visits at which its PUCT score
  // would reach the best child's; a child left under one visit is dropped.
  const float k_forced = opt_.forced_playout_k;
  if (k_forced > 0 && best.visits > 0) {
    const float sqrt_n = std::sqrt(std::max(1.0f, root.n));
    const float cu = opt_.c_puct * sqrt_n;
    const float best_score = best.q + cu * best.root_prior / (1.0f + best.visits);
    for (int i = 0; i < int(out.size()); ++i) {
      RootChild& k = out[i];
      if (i == s.best || k.visits <= 0) continue;
      const float forced = std::sqrt(k_forced * k.root_prior * root.n);
      const float gap = best_score - k.q;
      const float support = gap > 0 ? cu * k.root_prior / gap - 1.0f : k.visits;
      float t = std::min(k.visits, std::max(support, k.visits - forced));
      if (t < k.visits && t < 1.0f) t = 0.0f;
      k.target = std::max(0.0f, t);
    }
  }

  double total = 0;
  for (const RootChild& k : out) total += k.target;
  double kl = 0;
  if (total > 0)
    for (const RootChild& k : out) {
      if (k.target <= 0) continue;
      const double pi = k.target / total;
      kl += pi * (std::log(pi) - std::log(std::max(double(k.prior), 1e-12)));
    }
  s.surprise = float(std::max(0.0, kl));
  return s;
}

Move Tree::choose_move(const MoveChoiceOptions& choice, int ply, std::vector<RootChild>& kids) {
  const RootSummary s = summarize(kids);
  if (kids.empty()) return MOVE_NONE;
  if (choice.mode == MoveChoice::POLICY) {
    int best = 0;
    for (int i = 1; i < int(kids.size()); ++i)
      if (kids[i].prior > kids[best].prior) best = i;
    return kids[best].move;
  }
  if (choice.mode == MoveChoice::MOST_VISITS || ply >= choice.greedy_after_ply)
    return kids[s.best].move;
  const double temp = std::max(1e-3f, choice.temperature_at(ply));
  double tmax = 0;
  for (const RootChild& k : kids) tmax = std::max(tmax, double(k.target));
  if (tmax <= 0) return kids[s.best].move;
  weights_.resize(kids.size());
  double total = 0;
  for (size_t i = 0; i < kids.size(); ++i) {
    weights_[i] = kids[i].target > 0 ? std::exp(std::log(kids[i].target / tmax) / temp) : 0.0;
    total += weights_[i];
  }
  double r = rng_.uniform() * total;
  for (size_t i = 0; i < kids.size(); ++i) {
    r -= weights_[i];
    if (r < 0 && weights_[i] > 0) return kids[i].move;
  }
  return kids[s.best].move;
}

void Tree::principal_variation(std::vector<Move>& out, int max_len) const {
  out.clear();
  uint32_t idx = 0;
  while (int(out.size()) < max_len) {
    const Node& x = nodes_[idx];
    if (x.state != NodeState::EXPANDED || x.first_child == kNoNode) return;
    uint32_t best = kNoNode;
    for (int i = 0; i < x.num_children; ++i) {
      const uint32_t ci = x.first_child + i;
      if (nodes_[ci].n <= 0) continue;
      if (best == kNoNode || nodes_[ci].n > nodes_[best].n ||
          (nodes_[ci].n == nodes_[best].n && nodes_[ci].prior > nodes_[best].prior))
        best = ci;
    }
    if (best == kNoNode) return;
    out.push_back(Move(nodes_[best].move));
    idx = best;
  }
}

void Tree::path_to(uint32_t node, std::vector<Move>& out) const {
  out.clear();
  for (uint32_t i = node; i != 0 && i != kNoNode; i = nodes_[i].parent) out.push_back(Move(nodes_[i].move));
  std::reverse(out.begin(), out.end());
}

}  // namespace cz
