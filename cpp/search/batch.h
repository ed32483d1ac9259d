// Layer 5 (search): the leaf-batch protocol shared by the searcher and the
// self-play actor. A batch is a list of (slot, leaf node) pairs whose planes
// were written to the caller's buffer in the same order; batches are answered
// first in, first out, and at most `max_outstanding` wait at once (double
// buffering lets tree work on one overlap inference on the other).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/encoding.h"

namespace cz {

struct LeafRef {
  uint32_t slot;  // which tree
  uint32_t node;  // its leaf waiting for the network
};

class BatchRing {
 public:
  explicit BatchRing(int max_outstanding = 2) : batches_(size_t(max_outstanding)) {}

  int max_outstanding() const { return int(batches_.size()); }
  int outstanding() const { return count_; }
  bool full() const { return count_ == int(batches_.size()); }

  // The batch to fill next (cleared); commit() it when non-empty.
  std::vector<LeafRef>& open() {
    std::vector<LeafRef>& b = batches_[(head_ + size_t(count_)) % batches_.size()];
    b.clear();
    return b;
  }
  void commit() { ++count_; }
  // The oldest outstanding batch, then pop() it once answered.
  const std::vector<LeafRef>& oldest() const { return batches_[head_]; }
  void pop() {
    head_ = (head_ + 1) % batches_.size();
    --count_;
  }

 private:
  std::vector<std::vector<LeafRef>> batches_;
  size_t head_ = 0;
  int count_ = 0;
};

// Empty when the network's answer to `batch` is usable, else a message: each
// WDL row must be a finite probability triple, and the logits the search
// will read (those of the leaf's legal moves; `legal(j, fn)` calls fn(action)
// for row j) must not be NaN or +inf (-inf marks a masked move). Only the
// legal entries are read, so the check costs a few dozen loads per row.
template <class ForEachLegal>
std::string check_answers(const std::vector<LeafRef>& batch, const float* logits,
                          const float* wdl, ForEachLegal legal) {
  for (size_t j = 0; j < batch.size(); ++j) {
    const float* w = wdl + 3 * j;
    for (int k = 0; k < 3; ++k)
      if (!std::isfinite(w[k]) || w[k] < -1e-3f || w[k] > 1.001f)
        return "wdl row " + std::to_string(j) + " is not a probability triple";
    const float* l = logits + j * size_t(kNumActions);
    bool bad = false;
    legal(j, [&](int action) { bad |= !(l[action] <= FLT_MAX) && l[action] != -INFINITY; });
    if (bad) return "policy logits row " + std::to_string(j) + " holds NaN or +inf for a legal move";
  }
  return {};
}

}  // namespace cz
