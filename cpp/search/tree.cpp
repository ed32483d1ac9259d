// PUCT tree: traversal with virtual loss, expansion, backup, root noise,
// subtree reuse. Root statistics and move choice live in root_stats.cpp.
#include "search/tree.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/encoding.h"
#include "search/gumbel.h"
#include "search/leaf_material.h"

namespace cz {

Tree::Tree(const SearchOptions& options, uint64_t seed) : opt_(options), rng_(seed) {
  Game start;
  reset(start);
}

void Tree::reset(const Game& game) {
  root_pos_ = game.position();
  keys_ = game.keys();
  history_len_ = keys_.size();
  Move recent[kHistoryMoves];
  int n = game.recent_moves(recent, kHistoryMoves);
  history_.assign(std::make_reverse_iterator(recent + n), std::make_reverse_iterator(recent));
  nodes_.clear();
  nodes_.alloc(1);
  noise_active_ = noise_wanted_ = false;
  gumbel_.active = gumbel_.wanted = false;
  target_ = 0;
  leaf_material_.clear();
  clear_depths();
}

void Tree::advance(Move m, NodeArena& scratch) {
  assert(nodes_[0].inflight == 0);
  leaf_material_.clear();
  const Node& root = nodes_[0];
  uint32_t child = kNoNode;
  if (root.first_child != kNoNode)
    for (int i = 0; i < root.num_children; ++i)
      if (nodes_[root.first_child + i].move == m.data) child = root.first_child + i;
  // A terminal child has no subtree; when the game goes on from it (a twofold
  // repetition inside the tree is not the end of the game) it starts afresh.
  bool keep = child != kNoNode && nodes_[child].state == NodeState::EXPANDED;
  if (keep) {
    nodes_.extract_subtree(child, opt_.subtree_retention, scratch);
    nodes_.swap(scratch);
  } else {
    nodes_.clear();
    nodes_.alloc(1);
  }
  nodes_[0].parent = kNoNode;
  nodes_[0].move = 0;
  nodes_[0].action = 0;
  nodes_[0].prior = 0;
  root_pos_.play(m);
  keys_.resize(history_len_);
  keys_.push_back(root_pos_.key());
  history_len_ = keys_.size();
  history_.push_back(m);
  if (int(history_.size()) > kHistoryMoves) history_.erase(history_.begin());
  noise_active_ = noise_wanted_ = false;
  gumbel_.active = gumbel_.wanted = false;
  target_ = 0;
  clear_depths();
}

void Tree::set_draw_side(float root_value) {
  const float d = opt_.draw_score;
  draw_root_ = root_value > 0 ? -d : root_value < 0 ? d : 0.0f;
  draw_side_wanted_ = false;
}

void Tree::begin_search(int visits, bool noise) {
  target_ = float(visits);
  noise_active_ = noise_wanted_ = false;
  gumbel_.active = gumbel_.wanted = false;
  clear_depths();
  draw_root_ = 0;
  draw_side_wanted_ = false;
  if (opt_.draw_score > 0) {
    if (root_expanded()) set_draw_side(nodes_[0].value());
    else draw_side_wanted_ = true;
  }
  if (opt_.root == RootRule::GUMBEL) {  // its own simulations; retained visits are extra
    gumbel_.noise = noise;
    gumbel_.budget = visits;
    if (root_expanded()) {
      target_ = nodes_[0].n + float(visits);
      init_gumbel();
    } else {
      target_ = float(visits) + 1.0f;  // the root's own evaluation is not a simulation
      gumbel_.wanted = true;
    }
    return;
  }
  if (noise && opt_.dirichlet_epsilon > 0) {
    if (root_expanded()) make_noise();
    else noise_wanted_ = true;
  }
}

void Tree::make_noise() {
  const Node& root = nodes_[0];
  noise_.resize(root.num_children);
  rng_.dirichlet(opt_.dirichlet_alpha, noise_.data(), root.num_children);
  noise_active_ = true;
  noise_wanted_ = false;
}

namespace {
void prefetch_lines(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off);
}
}  // namespace

void Tree::prefetch_tree() const { prefetch_lines(this, sizeof(*this)); }

void Tree::prefetch_root() const {
  __builtin_prefetch(&nodes_[0]);
  __builtin_prefetch(&keys_[history_len_ - 1]);  // where a traversal's keys go
}

void Tree::prefetch_root_children() const {
  const Node& r = nodes_[0];
  if (r.first_child != kNoNode) prefetch_lines(&nodes_[r.first_child], r.num_children * sizeof(Node));
}

// A proven root ends the search once it holds a whole visit (retained visits
// may be fractional); the visits it still takes reach proven children only,
// so they cost no network call.
bool Tree::proven_enough() const {
  const Node& r = nodes_[0];
  return root_proven() && r.state == NodeState::EXPANDED && r.n >= 1.0f;
}

bool Tree::needs_leaf() const {
  const Node& r = nodes_[0];
  return r.n + float(r.inflight) < target_ && int(r.inflight) < opt_.leaves_per_tree && !proven_enough();
}

bool Tree::done() const {
  const Node& r = nodes_[0];
  return (r.n >= target_ || proven_enough()) && r.inflight == 0;
}

float Tree::root_prior(int i) const {
  const Node& c = nodes_[nodes_[0].first_child + i];
  return noise_active_ ? puct::noisy_prior(c.prior, noise_[i], opt_.dirichlet_epsilon) : c.prior;
}

float Tree::proven_value(const Node& x, int depth) const {
  const float scale = x.plies ? std::pow(opt_.discount, float(x.plies)) : 1.0f;
  return (x.lo == kDraw ? draw_value(depth) : float(x.lo)) * scale;
}

float Tree::child_q(const Node& child, bool proven, int depth, float fpu) const {
  if (proven) return -opt_.discount * proven_value(child, depth + 1);
  return puct::q(child.w, child.n, float(child.inflight), opt_.discount, opt_.virtual_loss, fpu);
}

// Children are sorted when their parent is expanded: those that end the game
// first, the others by prior (descending). Away from the root every
// unreached (NEW) child scores fpu + cu * prior, so the first NEW child beats
// all later ones and, as only it can be chosen, reached children always form
// a prefix of the non-terminal ones: the scan stops at the first NEW child.
// At the root, noise and forced playouts reorder, so it scans all. A proven
// child scores its exact value (at the root alone, without an exploration
// term); it is never descended into (a traversal that selects it backs that
// value up at once) and may be chosen while its node waits for the network.
template <bool Root>
uint32_t Tree::select(uint32_t idx, int depth) const {
  const Node& p = nodes_[idx];
  const float cu = puct::exploration(opt_.c_puct, p.n + float(p.inflight));
  const float fpu = p.value() - opt_.fpu_reduction;
  const float* noise = Root && noise_active_ ? noise_.data() : nullptr;
  const float eps = opt_.dirichlet_epsilon;
  const float forced_scale = Root ? opt_.forced_playout_k * p.n : 0.0f;  // forced: nc^2 < k P N
  const bool solver = opt_.proven_results;
  uint32_t best = kNoNode, best_forced = kNoNode;
  float best_score = -1e30f, best_forced_score = -1e30f;
  const Node* kids = &nodes_[p.first_child];
  for (int i = 0; i < p.num_children; ++i) {
    const Node& c = kids[i];
    const bool proven = solver && c.proven();
    if (c.state == NodeState::PENDING && !proven) continue;  // already waiting for the network
    const float prior = Root && noise ? puct::noisy_prior(c.prior, noise[i], eps) : c.prior;
    const float nc = c.n + float(c.inflight);
    const float q = child_q(c, proven, depth, fpu);
    // At the root a proven child's value is exact: no exploration bonus, no
    // forced playouts (visits there would only copy its prior into the visit
    // counts, the policy target and the move choice). Below the root it keeps
    // its bonus: its exact value backed up again steers the search there.
    const float score = Root && proven ? q : puct::score(q + (proven ? 0.0f : moves_left_utility(p, c, q)), prior, nc, cu);
    if (score > best_score) best_score = score, best = p.first_child + i;
    if constexpr (Root) {
      if (!proven && forced_scale > 0 && prior > 0 && nc * nc < forced_scale * prior && score > best_forced_score)
        best_forced_score = score, best_forced = p.first_child + i;
    } else if (c.state == NodeState::NEW) {
      break;
    }
  }
  return best_forced != kNoNode ? best_forced : best;
}

void Tree::expand_children(uint32_t idx, const Position& pos, const MoveList& list) {
  int actions[MoveList::kCapacity];
  actions_of(pos, list.moves, list.size, actions);
  const uint32_t first = nodes_.alloc(list.size);  // may move nodes: index only
  Node& x = nodes_[idx];
  x.first_child = first;
  x.num_children = uint8_t(list.size);
  Node* kids = &nodes_[first];
  for (int i = 0; i < list.size; ++i) {
    kids[i].parent = idx;
    kids[i].move = list.moves[i].data;
    kids[i].action = uint16_t(actions[i]);
  }
}

int Tree::repetitions_of(Key key, int halfmove_clock, bool next) const {
  const int t = int(keys_.size()) - (next ? 0 : 1);  // index of `key` in the sequence
  const int window = std::min(halfmove_clock, t);
  int count = 0;
  for (int back = 4; back <= window; back += 2)
    if (keys_[t - back] == key) ++count;
  return count;
}

static float terminal_value(const GameStatus& st) {
  return st.termination == Termination::CHECKMATE ? -1.0f : 0.0f;
}

// keys_ ends with `pos` (the node being expanded), so a child is one ply on.
void Tree::classify_children(uint32_t idx, const Position& pos) {
  Node* kids = &nodes_[nodes_[idx].first_child];
  const int k = nodes_[idx].num_children;
  const int min_reps = opt_.twofold_draws ? 1 : 2;  // children are never the root
  for (int i = 0; i < k; ++i) {
    Position c = pos;
    c.play(Move(kids[i].move));
    const int reps = repetitions_of(c.key(), c.halfmove_clock(), true);
    GameStatus st = evaluate_status(c, reps, c.count_legal_moves());
    if (!st.is_over() && reps >= min_reps) st.termination = Termination::THREEFOLD_REPETITION;
    if (!st.is_over()) continue;
    kids[i].state = NodeState::TERMINAL;
    kids[i].raw = terminal_value(st);
    kids[i].prove(kids[i].raw < 0 ? kLoss : kDraw, 0);
  }
}

void Tree::prove_up(uint32_t idx) {
  while (idx != kNoNode) {
    Node& x = nodes_[idx];
    if (x.first_child == kNoNode || x.state == NodeState::TERMINAL) return;
    const Node* kids = &nodes_[x.first_child];
    int lo = kLoss, hi = kLoss;
    int win = -1, draw = -1, loss = -1;  // shortest win, shortest draw, longest loss (child plies)
    for (int i = 0; i < x.num_children; ++i) {
      const Node& c = kids[i];
      lo = std::max(lo, -int(c.hi));
      hi = std::max(hi, -int(c.lo));
      if (!c.proven()) continue;
      const int p = c.plies;
      if (c.lo == kLoss) win = win < 0 ? p : std::min(win, p);
      else if (c.lo == kDraw) draw = draw < 0 ? p : std::min(draw, p);
      else loss = std::max(loss, p);
    }
    int plies = 0;
    if (lo == hi) plies = 1 + (lo == kWin ? win : lo == kDraw ? draw : loss);
    if (lo == x.lo && hi == x.hi && plies == x.plies) return;
    x.lo = int8_t(lo);
    x.hi = int8_t(hi);
    x.plies = uint16_t(std::min(plies, 65535));
    idx = x.parent;
  }
}

void Tree::encode(const Position& pos, int repetitions, float* planes) const {
  Move recent[kHistoryMoves];
  int k = 0;
  for (auto it = path_.rbegin(); it != path_.rend() && k < kHistoryMoves; ++it) recent[k++] = *it;
  for (auto it = history_.rbegin(); it != history_.rend() && k < kHistoryMoves; ++it)
    recent[k++] = *it;
  EncodeContext ctx;
  ctx.recent = recent;
  ctx.num_recent = k;
  ctx.repetitions = repetitions;
  encode_planes(pos, ctx, planes);
}

Traversal Tree::traverse(float* planes) {
  keys_.resize(history_len_);
  path_.clear();
  Position pos = root_pos_;
  uint32_t idx = 0;
  nodes_[0].inflight++;
  const bool solver = opt_.proven_results;
  for (;;) {
    Node& x = nodes_[idx];
    const int depth = int(path_.size());
    if (idx != 0 && solver && x.proven()) {  // exact value, nothing to search below
      note_depth();
      backup(idx, proven_value(x, depth), end_plies(x));
      return {Traversal::TERMINAL, idx};
    }
    if (x.state == NodeState::NEW) {
      const int reps = repetitions_of(pos.key(), pos.halfmove_clock(), false);
      MoveList list;  // generated once: the status and the children both need it
      pos.legal_moves(list);
      GameStatus st = evaluate_status(pos, reps, list.size);
      if (!st.is_over() && idx != 0 && opt_.twofold_draws && reps >= 1)
        st.termination = Termination::THREEFOLD_REPETITION;  // a repetition inside the tree
      if (st.is_over()) {
        x.state = NodeState::TERMINAL;
        x.raw = terminal_value(st);
        x.prove(x.raw < 0 ? kLoss : kDraw, 0);
        note_depth();
        backup(idx, x.raw < 0 ? x.raw : draw_value(depth), end_plies(x));
        return {Traversal::TERMINAL, idx};
      }
      expand_children(idx, pos, list);
      if (solver) {
        classify_children(idx, pos);
        prove_up(idx);
      }
      nodes_[idx].state = NodeState::PENDING;
      if (opt_.leaf_material > 0) {
        const int m = quiescent_material(pos, opt_.leaf_material_depth);
        leaf_material_.emplace_back(idx, std::tanh(float(m) / opt_.leaf_material_scale));
      }
      encode(pos, reps, planes);
      note_depth();
      return {Traversal::LEAF, idx};
    }
    if (x.state == NodeState::TERMINAL) {
      note_depth();
      backup(idx, x.raw < 0 ? x.raw : draw_value(depth), end_plies(x));
      return {Traversal::TERMINAL, idx};
    }
    if (x.state == NodeState::PENDING) {  // only the root can get here
      undo(idx);
      ++collisions_;
      return {Traversal::COLLISION, kNoNode};
    }
    const uint32_t c = idx != 0 ? select<false>(idx, depth) : gumbel_.active ? select_gumbel() : select<true>(idx, depth);
    if (c == kNoNode) {
      undo(idx);
      ++collisions_;
      return {Traversal::COLLISION, kNoNode};
    }
    Node& next = nodes_[c];
    next.inflight++;
    if (next.first_child != kNoNode)  // the next scan's first lines load while the move is played
      prefetch_lines(&nodes_[next.first_child], 128);
    const Move m(next.move);
    pos.play(m);
    keys_.push_back(pos.key());
    path_.push_back(m);
    idx = c;
  }
}

void Tree::append_actions(uint32_t leaf, std::vector<uint16_t>& out) const {
  const Node& x = nodes_[leaf];
  assert(x.state == NodeState::PENDING);
  const Node* kids = &nodes_[x.first_child];
  for (int i = 0; i < x.num_children; ++i) out.push_back(kids[i].action);
}

Backup Tree::apply(uint32_t leaf, const float* legal, const float* wdl, float moves_left) {
  Node& x = nodes_[leaf];
  assert(x.state == NodeState::PENDING);
  Node* kids = &nodes_[x.first_child];
  const int k = x.num_children;
  float prior[MoveList::kCapacity];
  float mx = -INFINITY;
  for (int i = 0; i < k; ++i) mx = std::max(mx, legal[i]);
  float sum = 0;
  for (int i = 0; i < k; ++i) {
    prior[i] = std::exp(legal[i] - mx);
    sum += prior[i];
  }
  if (std::isfinite(mx) && sum > 0) {
    const float inv = 1.0f / sum;
    for (int i = 0; i < k; ++i) prior[i] *= inv;
  } else {  // every legal logit is -inf: no preference
    for (int i = 0; i < k; ++i) prior[i] = 1.0f / float(k);
  }
  // Children that end the game first, then the most likely (stable: ties
  // keep legal-move order). Children are NEW or TERMINAL (unvisited), so
  // moving whole nodes permutes them.
  uint8_t order[MoveList::kCapacity];
  bool sorted = true;
  auto before = [&](int a, int b) {  // a strictly before b
    const bool ta = kids[a].state == NodeState::TERMINAL, tb = kids[b].state == NodeState::TERMINAL;
    return ta != tb ? ta : prior[a] > prior[b];
  };
  for (int i = 0; i < k; ++i) {
    order[i] = uint8_t(i);
    sorted &= i == 0 || !before(i, i - 1);
  }
  if (sorted) {
    for (int i = 0; i < k; ++i) kids[i].prior = prior[i];
  } else {
    for (int i = 1; i < k; ++i) {
      const uint8_t moving = order[i];
      int j = i;
      for (; j > 0 && before(moving, order[j - 1]); --j) order[j] = order[j - 1];
      order[j] = moving;
    }
    if (sort_scratch_.size() < size_t(k)) sort_scratch_.resize(MoveList::kCapacity);
    Node* tmp = sort_scratch_.data();
    for (int i = 0; i < k; ++i) {
      tmp[i] = kids[order[i]];
      tmp[i].prior = prior[order[i]];
    }
    std::copy(tmp, tmp + k, kids);
  }
  x.raw = std::clamp(wdl[0] - wdl[2], -1.0f, 1.0f);
  if (opt_.leaf_material > 0) x.raw = blend_leaf_material(leaf, x.raw);
  x.state = NodeState::EXPANDED;
  if (leaf == 0 && noise_wanted_) make_noise();
  if (leaf == 0 && gumbel_.wanted) init_gumbel();
  if (leaf == 0 && draw_side_wanted_) set_draw_side(x.raw);
  if (opt_.proven_results && x.proven()) return {leaf, proven_value(x, depth_of(leaf)), end_plies(x)};
  return {leaf, x.raw, moves_left};
}

float Tree::blend_leaf_material(uint32_t leaf, float value) {
  for (size_t i = leaf_material_.size(); i-- > 0;) {
    if (leaf_material_[i].first != leaf) continue;
    const float w = opt_.leaf_material, m = leaf_material_[i].second;
    leaf_material_[i] = leaf_material_.back();
    leaf_material_.pop_back();
    return std::clamp((1.0f - w) * value + w * m, -1.0f, 1.0f);
  }
  return value;  // not traversed by this tree since its last reset: unreachable
}

int Tree::depth_of(uint32_t idx) const {
  int d = 0;
  for (uint32_t i = idx; i != 0 && i != kNoNode; i = nodes_[i].parent) ++d;
  return d;
}

void Tree::backup(uint32_t idx, float value, float plies) {
  Backup b{idx, value, plies};
  while (backup_step(b)) {
  }
}

void Tree::undo(uint32_t idx) {
  for (;;) {
    Node& x = nodes_[idx];
    x.inflight--;
    if (x.parent == kNoNode) return;
    idx = x.parent;
  }
}

}  // namespace cz
