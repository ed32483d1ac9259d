// The Gumbel root of a Tree (tree.h, SPEC 6): the considered moves, the
// root's choice of child per simulation by sequential halving, and the move
// to play. The arithmetic is in gumbel.cpp; the policy target in root_stats.cpp.
#include <algorithm>
#include <cmath>

#include "search/gumbel.h"
#include "search/tree.h"

namespace cz {

bool Tree::gumbel_lost(int i) const {
  const Node& c = nodes_[nodes_[0].first_child + i];
  return opt_.proven_results && c.proven() && c.lo == kWin;  // the opponent's win
}

float Tree::gumbel_search_visits(int i) const {
  const Node& c = nodes_[nodes_[0].first_child + i];
  return std::max(0.0f, std::round(c.n - gumbel_.base[size_t(i)]));
}

void Tree::init_gumbel() {
  GumbelRoot& G = gumbel_;
  const Node& r = nodes_[0];
  const int k = r.num_children;
  G.wanted = false;
  G.active = k > 0;
  G.g.assign(size_t(k), 0.0f);
  G.logit.resize(size_t(k));
  G.base.resize(size_t(k));
  G.considered.assign(size_t(k), 0);
  int open = 0;  // moves not proven lost
  for (int i = 0; i < k; ++i) {
    const Node& c = nodes_[r.first_child + i];
    G.logit[size_t(i)] = std::log(std::max(c.prior, 1e-30f));
    G.base[size_t(i)] = c.n;
    if (G.noise) G.g[size_t(i)] = gumbel::sample(rng_.uniform());
    open += !gumbel_lost(i);
  }
  // Top m by g + logit, proven losses last (considered only when nothing else remains).
  std::vector<int> order(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) order[size_t(i)] = i;
  auto key = [&](int i) { return G.g[size_t(i)] + G.logit[size_t(i)]; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const bool la = gumbel_lost(a), lb = gumbel_lost(b);
    return la != lb ? lb : key(a) > key(b);
  });
  const int eligible = open > 0 ? open : k;
  G.m = std::max(1, std::min({opt_.gumbel_considered, std::max(1, G.budget), eligible}));
  for (int j = 0; j < G.m && j < k; ++j) G.considered[size_t(order[size_t(j)])] = 1;
}

void Tree::gumbel_sigma(float* sigma) const {
  const Node& r = nodes_[0];
  const int k = r.num_children;
  float visits[MoveList::kCapacity], prior[MoveList::kCapacity], q[MoveList::kCapacity];
  const float fpu = r.value() - opt_.fpu_reduction;  // unused: unvisited children get v_mix
  for (int i = 0; i < k; ++i) {
    const Node& c = nodes_[r.first_child + i];
    const bool proven = opt_.proven_results && c.proven();
    const float n = c.n + float(c.inflight);
    // A proven child's value is exact without a visit: count it as visited.
    visits[i] = n > 0 ? n : proven ? 1e-6f : 0.0f;
    prior[i] = c.prior;
    q[i] = visits[i] > 0 ? child_q(c, proven, 0, fpu) : 0.0f;
  }
  gumbel::sigma_completed(r.raw, visits, prior, q, k, opt_.gumbel_c_visit, opt_.gumbel_c_scale, sigma);
}

uint32_t Tree::select_gumbel() {
  GumbelRoot& G = gumbel_;
  const Node& r = nodes_[0];
  const int k = r.num_children;
  const Node* kids = &nodes_[r.first_child];
  // A considered move proven lost since gives its place to the best other
  // move by g + logit that is not lost (when there is one).
  for (int i = 0; i < k; ++i) {
    if (!G.considered[size_t(i)] || !gumbel_lost(i)) continue;
    int repl = -1;
    for (int j = 0; j < k; ++j)
      if (!G.considered[size_t(j)] && !gumbel_lost(j) &&
          (repl < 0 || G.g[size_t(j)] + G.logit[size_t(j)] > G.g[size_t(repl)] + G.logit[size_t(repl)]))
        repl = j;
    if (repl < 0) break;
    G.considered[size_t(i)] = 0;
    G.considered[size_t(repl)] = 1;
  }
  bool any_open = false;
  for (int i = 0; i < k; ++i) any_open |= G.considered[size_t(i)] && !gumbel_lost(i);
  float sigma[MoveList::kCapacity];
  gumbel_sigma(sigma);
  int started = 0;  // simulations of this search begun at considered moves (in flight included)
  int count[MoveList::kCapacity];
  for (int i = 0; i < k; ++i) {
    count[i] = int(gumbel_search_visits(i)) + int(kids[i].inflight);
    if (G.considered[size_t(i)]) started += count[i];
  }
  const int level = gumbel::halving_level(started, G.budget, G.m);
  int best = -1, best_low = -1;
  float best_score = -INFINITY, low_score = -INFINITY;
  for (int i = 0; i < k; ++i) {
    if (!G.considered[size_t(i)] || (any_open && gumbel_lost(i))) continue;
    const Node& c = kids[i];
    const bool proven = opt_.proven_results && c.proven();
    if (c.state == NodeState::PENDING && !proven) continue;  // waiting for the network
    const float score = G.g[size_t(i)] + G.logit[size_t(i)] + sigma[i];
    if (count[i] == level && score > best_score) best = i, best_score = score;
    if (best_low < 0 || count[i] < count[best_low] || (count[i] == count[best_low] && score > low_score))
      best_low = i, low_score = score;
  }
  if (best < 0) best = best_low;  // in-flight traversals or replaced moves broke the level
  return best < 0 ? kNoNode : r.first_child + uint32_t(best);
}

int Tree::gumbel_choice(const float* sigma) const {
  const GumbelRoot& G = gumbel_;
  const int k = nodes_[0].num_children;
  bool any_open = false;
  float most = -1;
  for (int i = 0; i < k; ++i)
    if (G.considered[size_t(i)] && !gumbel_lost(i)) any_open = true;
  for (int i = 0; i < k; ++i)
    if (G.considered[size_t(i)] && !(any_open && gumbel_lost(i))) most = std::max(most, gumbel_search_visits(i));
  int best = -1;
  float best_score = -INFINITY;
  for (int i = 0; i < k; ++i) {
    if (!G.considered[size_t(i)] || (any_open && gumbel_lost(i)) || gumbel_search_visits(i) < most) continue;
    const float score = G.g[size_t(i)] + G.logit[size_t(i)] + sigma[i];
    if (best < 0 || score > best_score) best = i, best_score = score;
  }
  return best;
}

}  // namespace cz
