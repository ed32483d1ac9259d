// What a finished search says at the root: raw visits, the pruned policy
// target (KataGo's forced-playout pruning), values, surprise, the move to
// play and the principal variation. With proven results the move to play at
// temperature 0 is the shortest proven win, else the most visited move that
// is not a proven loss (or a proven draw whose exact value is higher: proven
// children take no exploration visits at the root), else (every move loses)
// the longest loss; the policy target is then the shortest proven wins alone,
// or else has no mass on proven losses, and the move to play carries its
// largest entry.
#include <algorithm>
#include <cmath>

#include "search/gumbel.h"
#include "search/tree.h"

namespace cz {

namespace {

constexpr int kUnproven = -2;

bool more_visited(const RootChild& a, const RootChild& b) {
  return a.visits > b.visits || (a.visits == b.visits && a.prior > b.prior);
}

// Index of the shortest proven win (ties: more visits, higher prior), -1 if none.
int shortest_win(const std::vector<RootChild>& kids) {
  int best = -1;
  for (int i = 0; i < int(kids.size()); ++i) {
    if (kids[i].proven != 1) continue;
    if (best < 0 || kids[i].plies < kids[best].plies ||
        (kids[i].plies == kids[best].plies && more_visited(kids[i], kids[best])))
      best = i;
  }
  return best;
}

// The move to play at temperature 0 (file comment); ties as more_visited, then lower index.
int best_child(const std::vector<RootChild>& kids) {
  if (const int win = shortest_win(kids); win >= 0) return win;
  int best = -1, draw = -1;
  for (int i = 0; i < int(kids.size()); ++i) {
    if (kids[i].proven != -1 && (best < 0 || more_visited(kids[i], kids[best]))) best = i;
    if (kids[i].proven == 0 && (draw < 0 || kids[i].q > kids[draw].q)) draw = i;
  }
  // A proven draw takes no exploration visits at the root: it is played when
  // its exact value beats the value of the most visited move.
  if (draw >= 0 && best >= 0 && kids[draw].q > kids[best].q) return draw;
  if (best >= 0) return best;
  for (int i = 0; i < int(kids.size()); ++i)  // every move loses: the longest loss
    if (best < 0 || kids[i].plies > kids[best].plies ||
        (kids[i].plies == kids[best].plies && more_visited(kids[i], kids[best])))
      best = i;
  return best;
}

// Policy target of a root with proven children: the shortest wins share the
// visit mass; otherwise proven losses get none while another move remains;
// never an empty target.
void proven_targets(std::vector<RootChild>& kids, int best, bool best_largest) {
  if (kids[best].proven == 1) {
    double mass = 0;
    int n = 0;
    for (const RootChild& k : kids) {
      mass += k.visits;
      n += k.proven == 1 && k.plies == kids[best].plies;
    }
    const float share = float(std::max(1.0, mass) / n);
    for (RootChild& k : kids) k.target = k.proven == 1 && k.plies == kids[best].plies ? share : 0.0f;
    return;
  }
  if (kids[best].proven != -1)
    for (RootChild& k : kids)
      if (k.proven == -1) k.target = 0.0f;
  if (!best_largest) return;  // the Gumbel target is a policy, not the move's visits
  // Visits may all have gone to moves proven lost since (or the root was
  // proven at its expansion), or the move to play is a proven draw that took
  // no visits: the move to play then carries the largest target.
  float top = 0;
  for (const RootChild& k : kids) top = std::max(top, k.target);
  if (kids[best].target < top || top <= 0) kids[best].target = std::max({1.0f, top, kids[best].visits});
}

}  // namespace

RootSummary Tree::summarize(std::vector<RootChild>& out) const {
  const Node& root = nodes_[0];
  RootSummary s;
  const bool solver = opt_.proven_results;
  s.visits = root.n;
  s.value = root.value();
  s.moves_left = root.moves_left();
  s.raw_value = root.raw;
  if (solver && root.proven()) {
    s.value = proven_value(root, 0);
    s.proven = root.lo;
    s.plies = root.plies;
  }
  out.clear();
  if (root.first_child == kNoNode || root.state == NodeState::TERMINAL) return s;
  const bool gumbel = gumbel_on() && root.state == NodeState::EXPANDED;
  float sigma[MoveList::kCapacity];
  if (gumbel) gumbel_sigma(sigma);
  for (int i = 0; i < root.num_children; ++i) {
    const Node& c = nodes_[root.first_child + i];
    RootChild k;
    k.move = Move(c.move);
    k.action = c.action;
    k.visits = c.n;
    k.target = c.n;
    k.prior = c.prior;
    k.root_prior = root_prior(i);
    k.q = child_q(c, solver && c.proven(), 0, root.value() - opt_.fpu_reduction);
    if (solver && c.proven()) k.proven = -c.lo, k.plies = c.plies + 1;
    else k.proven = kUnproven;
    k.moves_left = c.moves_left();
    if (k.proven == kUnproven) k.utility = moves_left_utility(root, c, k.q);
    if (gumbel) {
      k.considered = gumbel_.considered[size_t(i)];
      k.search_visits = gumbel_search_visits(i);
      k.gumbel = gumbel_.g[size_t(i)];
    }
    out.push_back(k);
  }
  if (gumbel) {  // the completed-Q improved policy is the target
    // Moves proven lost get no target while another move is open
    // (proven_targets), so they stay out of the softmax: a lost move with the
    // largest logit + sigma would otherwise set its maximum and the open
    // moves' shares could underflow to zero, leaving a row with no target.
    bool open = false;
    for (const RootChild& k : out) open |= k.proven != -1;
    float logit[MoveList::kCapacity], pi[MoveList::kCapacity];
    for (int i = 0; i < root.num_children; ++i)
      logit[i] = open && out[size_t(i)].proven == -1 ? -INFINITY : gumbel_.logit[size_t(i)];
    gumbel::improved_policy(logit, sigma, root.num_children, pi);
    for (int i = 0; i < root.num_children; ++i) out[size_t(i)].target = pi[i];
  }
  const int chosen = gumbel ? gumbel_choice(sigma) : -1;
  s.best = best_child(out);
  // Gumbel: a proven win first (best_child's), else the halving's survivor
  // (every move proven lost: best_child's longest loss).
  if (gumbel && out[size_t(s.best)].proven != 1 && chosen >= 0) s.best = chosen;
  const RootChild& best = out[s.best];
  s.best_q = best.q;

  // Forced-playout pruning: every child but the best loses at most its forced
  // visits sqrt(k P N), and only down to the visits at which its PUCT score
  // would reach the best child's (the moves-left utility counted in both, as
  // selection counts it); a child left under one visit is dropped.
  const float k_forced = opt_.forced_playout_k;
  if (!gumbel && k_forced > 0 && best.visits > 0 && best.proven != 1) {
    const float cu = puct::exploration(opt_.c_puct, root.n);
    const float best_score = puct::score(best.q + best.utility, best.root_prior, best.visits, cu);
    for (int i = 0; i < int(out.size()); ++i) {
      RootChild& k = out[i];
      if (i == s.best || k.visits <= 0) continue;
      const float forced = std::sqrt(k_forced * k.root_prior * root.n);
      const float support = puct::visits_at_score(best_score, k.q + k.utility, k.root_prior, cu, k.visits);
      float t = std::min(k.visits, std::max(support, k.visits - forced));
      if (t < k.visits && t < 1.0f) t = 0.0f;
      k.target = std::max(0.0f, t);
    }
  }
  if (solver) proven_targets(out, s.best, /*best_largest=*/!gumbel);

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
  // Gumbel: the halving's choice, with the noise drawn at begin_search (no temperature).
  if (choice.mode == MoveChoice::MOST_VISITS || ply >= choice.greedy_after_ply || gumbel_on())
    return kids[s.best].move;
  if (kids[s.best].proven == 1 || kids[s.best].proven == -1) return kids[s.best].move;  // a proof decides
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
    const bool proven = opt_.proven_results && x.proven();
    uint32_t best = proven ? proof_child(x) : kNoNode;
    bool fixed = proven;
    if (idx == 0 && !proven && gumbel_on()) {  // the move to play leads the line
      std::vector<RootChild> kids;
      const RootSummary s = summarize(kids);
      if (s.best >= 0) best = x.first_child + uint32_t(s.best), fixed = true;
    }
    for (int i = 0; i < x.num_children && !fixed; ++i) {
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

uint32_t Tree::proof_child(const Node& x) const {
  uint32_t best = kNoNode;
  for (int i = 0; i < x.num_children; ++i) {
    const uint32_t ci = x.first_child + i;
    const Node& c = nodes_[ci];
    if (!c.proven() || c.lo != -x.lo) continue;  // the child's result is the node's
    const Node* b = best == kNoNode ? nullptr : &nodes_[best];
    const bool longer = b && c.plies > b->plies, shorter = b && c.plies < b->plies;
    if (!b || (x.lo == kLoss ? longer : shorter)) best = ci;
  }
  return best;
}

void Tree::proofs(std::vector<Proof>& out) const {
  out.clear();
  for (uint32_t i = 0; i < uint32_t(nodes_.size()); ++i)
    if (nodes_[i].proven()) out.push_back({i, nodes_[i].lo, nodes_[i].plies});
}

void Tree::path_to(uint32_t node, std::vector<Move>& out) const {
  out.clear();
  for (uint32_t i = node; i != 0 && i != kNoNode; i = nodes_[i].parent) out.push_back(Move(nodes_[i].move));
  std::reverse(out.begin(), out.end());
}

}  // namespace cz
