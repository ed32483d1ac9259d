// PUCT tree: traversal with virtual loss, expansion, backup, root noise,
// subtree reuse. Root statistics and move choice live in root_stats.cpp.
#include "search/tree.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/encoding.h"

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
  target_ = 0;
  clear_depths();
}

void Tree::advance(Move m, NodeArena& scratch) {
  assert(nodes_[0].inflight == 0);
  const Node& root = nodes_[0];
  uint32_t child = kNoNode;
  if (root.first_child != kNoNode)
    for (int i = 0; i < root.num_children; ++i)
      if (nodes_[root.first_child + i].move == m.data) child = root.first_child + i;
  bool keep = child != kNoNode && (nodes_[child].state == NodeState::EXPANDED ||
                                   nodes_[child].state == NodeState::TERMINAL);
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
  target_ = 0;
  clear_depths();
}

void Tree::begin_search(int visits, bool noise) {
  target_ = float(visits);
  noise_active_ = noise_wanted_ = false;
  clear_depths();
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

bool Tree::needs_leaf() const {
  const Node& r = nodes_[0];
  return r.n + float(r.inflight) < target_ && int(r.inflight) < opt_.leaves_per_tree;
}

bool Tree::done() const { return nodes_[0].n >= target_ && nodes_[0].inflight == 0; }

float Tree::root_prior(int i) const {
  const Node& c = nodes_[nodes_[0].first_child + i];
  if (!noise_active_) return c.prior;
  return (1.0f - opt_.dirichlet_epsilon) * c.prior + opt_.dirichlet_epsilon * noise_[i];
}

// Q(parent, child) from the parent's side to move, virtual loss included.
float Tree::child_q(const Node& parent, const Node& child) const {
  float nc = child.n + float(child.inflight);
  if (nc <= 0) return parent.value() - opt_.fpu_reduction;
  return (-opt_.discount * child.w - opt_.virtual_loss * float(child.inflight)) / nc;
}

// Children are sorted by prior (descending) when their parent is expanded.
// Away from the root every unreached (NEW) child scores fpu + cu * prior, so
// the first NEW child beats all later ones and, as only it can be chosen,
// reached children always form a prefix: the scan stops at the first NEW
// child. At the root, noise and forced playouts reorder, so it scans all.
template <bool Root>
uint32_t Tree::select(uint32_t idx) const {
  const Node& p = nodes_[idx];
  const float parent_n = p.n + float(p.inflight);
  const float cu = opt_.c_puct * std::sqrt(std::max(1.0f, parent_n));
  const float fpu = p.value() - opt_.fpu_reduction;
  const float gamma = opt_.discount, vl = opt_.virtual_loss;
  const float* noise = Root && noise_active_ ? noise_.data() : nullptr;
  const float eps = opt_.dirichlet_epsilon;
  const float forced_scale = Root ? opt_.forced_playout_k * p.n : 0.0f;  // forced: nc^2 < k P N
  uint32_t best = kNoNode, best_forced = kNoNode;
  float best_score = -1e30f, best_forced_score = -1e30f;
  const Node* kids = &nodes_[p.first_child];
  for (int i = 0; i < p.num_children; ++i) {
    const Node& c = kids[i];
    if (c.state == NodeState::PENDING) continue;  // already waiting for the network
    const float prior = Root && noise ? (1.0f - eps) * c.prior + eps * noise[i] : c.prior;
    const float nc = c.n + float(c.inflight);
    const float q = nc > 0 ? (-gamma * c.w - vl * float(c.inflight)) / nc : fpu;
    const float score = q + cu * prior / (1.0f + nc);
    if (score > best_score) best_score = score, best = p.first_child + i;
    if constexpr (Root) {
      if (forced_scale > 0 && prior > 0 && nc * nc < forced_scale * prior && score > best_forced_score)
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

int Tree::path_repetitions(int halfmove_clock) const {
  const int t = int(keys_.size()) - 1;
  const Key k = keys_[t];
  const int window = std::min(halfmove_clock, t);
  int count = 0;
  for (int back = 4; back <= window; back += 2)
    if (keys_[t - back] == k) ++count;
  return count;
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

static float terminal_value(const GameStatus& st) {
  return st.termination == Termination::CHECKMATE ? -1.0f : 0.0f;
}

Traversal Tree::traverse(float* planes) {
  keys_.resize(history_len_);
  path_.clear();
  Position pos = root_pos_;
  uint32_t idx = 0;
  nodes_[0].inflight++;
  for (;;) {
    Node& x = nodes_[idx];
    if (x.state == NodeState::NEW) {
      const int reps = path_repetitions(pos.halfmove_clock());
      MoveList list;  // generated once: the status and the children both need it
      pos.legal_moves(list);
      const GameStatus st = evaluate_status(pos, reps, list.size);
      if (st.is_over()) {
        x.state = NodeState::TERMINAL;
        x.raw = terminal_value(st);
        note_depth();
        backup(idx, x.raw);
        return {Traversal::TERMINAL, idx};
      }
      expand_children(idx, pos, list);
      nodes_[idx].state = NodeState::PENDING;
      encode(pos, reps, planes);
      note_depth();
      return {Traversal::LEAF, idx};
    }
    if (x.state == NodeState::TERMINAL) {
      note_depth();
      backup(idx, x.raw);
      return {Traversal::TERMINAL, idx};
    }
    if (x.state == NodeState::PENDING) {  // only the root can get here
      undo(idx);
      ++collisions_;
      return {Traversal::COLLISION, kNoNode};
    }
    const uint32_t c = idx == 0 ? select<true>(idx) : select<false>(idx);
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

Backup Tree::apply(uint32_t leaf, const float* legal, const float* wdl) {
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
  // Most likely first (stable: ties keep legal-move order). The children are
  // NEW and differ only in (prior, move, action), so sorting an index by
  // prior and writing those three back in that order permutes them.
  uint8_t order[MoveList::kCapacity];
  bool sorted = true;
  for (int i = 0; i < k; ++i) {
    order[i] = uint8_t(i);
    sorted &= i == 0 || prior[i - 1] >= prior[i];
  }
  if (sorted) {
    for (int i = 0; i < k; ++i) kids[i].prior = prior[i];
  } else {
    for (int i = 1; i < k; ++i) {
      const uint8_t moving = order[i];
      int j = i;
      for (; j > 0 && prior[order[j - 1]] < prior[moving]; --j) order[j] = order[j - 1];
      order[j] = moving;
    }
    uint16_t move[MoveList::kCapacity], action[MoveList::kCapacity];
    for (int i = 0; i < k; ++i) move[i] = kids[i].move, action[i] = kids[i].action;
    for (int i = 0; i < k; ++i) {
      kids[i].prior = prior[order[i]];
      kids[i].move = move[order[i]];
      kids[i].action = action[order[i]];
    }
  }
  x.raw = std::clamp(wdl[0] - wdl[2], -1.0f, 1.0f);
  x.state = NodeState::EXPANDED;
  if (leaf == 0 && noise_wanted_) make_noise();
  return {leaf, x.raw};
}

void Tree::backup(uint32_t idx, float value) {
  Backup b{idx, value};
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
