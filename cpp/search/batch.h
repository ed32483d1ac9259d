// Layer 5 (search): the leaf-batch protocol shared by the searcher and the
// self-play actor. A batch is a list of (slot, leaf node) pairs whose planes
// were written to the caller's buffer in the same order; batches are answered
// first in, first out, and at most `max_outstanding` wait at once (double
// buffering lets tree work on one overlap inference on the other).
// collect_leaves() is the prepare loop of both owners; an AnswerBuffer checks
// and applies an answer.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/encoding.h"
#include "search/tree.h"

namespace cz {

struct LeafRef {
  uint32_t slot;  // which tree
  uint32_t node;  // its leaf waiting for the network
};

// One batch: its leaves in row order and the actions of each leaf's legal
// moves (child order), copied when the leaf is added, while its children are
// still in cache, so that reading the answer needs no tree memory at all.
class LeafBatch {
 public:
  void clear() {
    leaves_.clear();
    actions_.clear();
    offsets_.assign(1, 0);
  }
  void add(uint32_t slot, uint32_t node, const Tree& tree) {
    leaves_.push_back({slot, node});
    tree.append_actions(node, actions_);
    offsets_.push_back(uint32_t(actions_.size()));
  }
  size_t size() const { return leaves_.size(); }
  bool empty() const { return leaves_.empty(); }
  const LeafRef& operator[](size_t j) const { return leaves_[j]; }
  const LeafRef* begin() const { return leaves_.data(); }
  const LeafRef* end() const { return leaves_.data() + leaves_.size(); }
  // Row j's actions are actions()[offset(j) .. offset(j + 1)).
  const uint16_t* actions() const { return actions_.data(); }
  uint32_t offset(size_t j) const { return offsets_[j]; }

 private:
  std::vector<LeafRef> leaves_;
  std::vector<uint16_t> actions_;
  std::vector<uint32_t> offsets_{0};
};

class BatchRing {
 public:
  explicit BatchRing(int max_outstanding = 2) : batches_(size_t(max_outstanding)) {}

  int max_outstanding() const { return int(batches_.size()); }
  int outstanding() const { return count_; }
  bool full() const { return count_ == int(batches_.size()); }

  // The batch to fill next (cleared); commit() it when non-empty.
  LeafBatch& open() {
    LeafBatch& b = batches_[(head_ + size_t(count_)) % batches_.size()];
    b.clear();
    return b;
  }
  void commit() { ++count_; }
  // The oldest outstanding batch, then pop() it once answered.
  const LeafBatch& oldest() const { return batches_[head_]; }
  void pop() {
    head_ = (head_ + 1) % batches_.size();
    --count_;
  }

 private:
  std::vector<LeafBatch> batches_;
  size_t head_ = 0;
  int count_ = 0;
};

// The prepare loop of a batch owner with `num` slots of one tree each:
// visits the slots round-robin from `cursor` (prefetching the trees of the
// next slots, see Tree::prefetch_tree) and takes leaves from each until the
// batch holds `capacity` rows or the slot has none to give now. `ready(i)`
// readies slot i (finishes a done search, starts the next, ...) and returns
// its tree, or nullptr when it has nothing to traverse; `tree_at(i)` is slot
// i's tree as it is. A leaf's planes go to row batch.size() of `planes`;
// `note(kind)` hears of every traversal that ended at a terminal or collided
// (a collision moves on to the next slot). A slot also yields after
// kTerminalRun traversals in a row that ended at terminals or proven nodes:
// a tree whose every line is decided (a large visit target, e.g. a UCI search
// bounded only by time) would otherwise spin here without returning to its
// owner, which checks the clock and `stop` between batches. Returns the slot
// at which the batch filled up, or -1 when every slot was visited.
constexpr int kTerminalRun = 4096;

template <class TreeAt, class Ready, class Note>
int collect_leaves(LeafBatch& batch, float* planes, int capacity, int num, int cursor, TreeAt tree_at,
                   Ready ready, Note note) {
  for (int k = 0; k < num; ++k) {
    const int i = (cursor + k) % num;
    tree_at((i + 3) % num).prefetch_tree();
    tree_at((i + 2) % num).prefetch_root();
    tree_at((i + 1) % num).prefetch_root_children();
    int terminal_run = 0;
    for (;;) {
      if (int(batch.size()) >= capacity) return i;
      Tree* tree = ready(i);
      if (tree == nullptr || !tree->needs_leaf()) break;
      const Traversal t = tree->traverse(planes + batch.size() * size_t(kPlaneFloats));
      if (t.kind == Traversal::LEAF) {
        batch.add(uint32_t(i), t.node, *tree);
        terminal_run = 0;
        continue;
      }
      note(t.kind);
      if (t.kind == Traversal::COLLISION || ++terminal_run >= kTerminalRun) break;
    }
  }
  return -1;
}

// Takes the network's answer to a batch to its trees in two passes. The
// first gathers the logits of each leaf's legal moves (the batch's actions)
// into one contiguous buffer and checks them: each WDL row must be a finite
// probability triple and no legal logit may be NaN or +inf (-inf marks a
// masked move), and a moves-left estimate (when given) must be finite and
// within [-kMaxMovesLeft, kMaxMovesLeft] (negative ones count as 0). A tree
// whose options use the moves-left utility refuses an answer without
// estimates. Only when every row passes does the second pass apply them,
// so a bad answer changes nothing. Only the legal entries of a logits row are
// read, and each is read once.
constexpr float kMaxMovesLeft = 100000.0f;

class AnswerBuffer {
 public:
  // Empty when applied, else why the answer was refused. `tree_of(slot)`
  // gives the Tree of a batch row's slot; `moves_left` (one per row, plies)
  // may be null.
  template <class TreeOf>
  std::string apply(const LeafBatch& batch, const float* logits, const float* wdl, const float* moves_left,
                    TreeOf tree_of) {
    const uint16_t* actions = batch.actions();
    legal_.resize(batch.offset(batch.size()));
    for (size_t j = 0; j < batch.size(); ++j) {
      if (moves_left == nullptr) {
        if (tree_of(batch[j].slot).options().moves_left_slope > 0)
          return "moves_left_slope > 0 needs the network's moves-left estimates (a length head); none were given";
      } else if (!(std::fabs(moves_left[j]) <= kMaxMovesLeft)) {
        return "moves_left row " + std::to_string(j) + " is not a finite plies count";
      }
      const float* w = wdl + 3 * j;
      for (int k = 0; k < 3; ++k)
        if (!std::isfinite(w[k]) || w[k] < -1e-3f || w[k] > 1.001f)
          return "wdl row " + std::to_string(j) + " is not a probability triple";
      const float* row = logits + j * size_t(kNumActions);
      bool bad = false;
      for (uint32_t i = batch.offset(j); i < batch.offset(j + 1); ++i) {
        legal_[i] = row[actions[i]];
        bad |= !(legal_[i] <= FLT_MAX) && legal_[i] != -INFINITY;
      }
      if (bad) return "policy logits row " + std::to_string(j) + " holds NaN or +inf for a legal move";
    }
    backups_.resize(batch.size());
    for (size_t j = 0; j < batch.size(); ++j)
      backups_[j] = tree_of(batch[j].slot).apply(batch[j].node, legal_.data() + batch.offset(j), wdl + 3 * j,
                                                 moves_left ? std::max(0.0f, moves_left[j]) : 0.0f);
    // Back the values up a ply at a time across all rows: each path is a
    // chain of dependent loads, and interleaving the chains overlaps their
    // cache misses. (With several leaves of one tree in a batch their shared
    // ancestors may add the values in another order than row by row.)
    for (bool more = true; more;) {
      more = false;
      for (size_t j = 0; j < batch.size(); ++j)
        if (backups_[j].node != kNoNode) more |= tree_of(batch[j].slot).backup_step(backups_[j]);
    }
    return {};
  }

 private:
  std::vector<float> legal_;     // legal logits of every row, back to back (batch offsets)
  std::vector<Backup> backups_;  // row j's value on its way to the root
};

}  // namespace cz
