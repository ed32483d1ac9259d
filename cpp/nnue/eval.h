// NNUE layer 4: accumulators and evaluation (docs/nnue.md sections 2-4).
// refresh() computes one perspective's accumulator from the board; output()
// is the exact integer output of section 3; evaluate_full() is both, the
// reference. EvalStack keeps the accumulators along a search line, one entry
// per ply, updated incrementally and lazily: push() records only what the
// move changes on the board; evaluate() (or accumulator()) brings the top
// entry up to date from its nearest computed ancestor, removals before
// additions. Results equal a refresh exactly. One EvalStack per search
// thread; the Network it reads is shared and immutable.
#pragma once

#include <vector>

#include "nnue/features.h"
#include "nnue/network.h"

namespace cz::nnue {

constexpr int kMaxPlies = 256;  // EvalStack's default depth: plies above the root

// acc = b1 + sum of W1 rows of the active features from `perspective`'s view (N values).
void refresh(const Network& net, const Position& pos, Color perspective, int16_t* acc);
// Centipawns from the side to move's view given its accumulator `us` and the other `them`.
int output(const Network& net, const int16_t* us, const int16_t* them);
// Refresh both perspectives and output: the reference evaluation.
int evaluate_full(const Network& net, const Position& pos);

class EvalStack {
 public:
  // Room for the root and `max_plies` plies above it; no allocation after this.
  explicit EvalStack(const Network& net, int max_plies = kMaxPlies);

  void reset(const Position& root);          // ply 0: full refresh
  void push(const Position& before, Move m);  // the child after legal move m in `before`
  void push_null();                           // null move: the same accumulators
  void pop();
  // Centipawns from the side to move's view; `pos` is the position at the top.
  int evaluate(const Position& pos);
  // The top entry's accumulator from `perspective`'s view (N values, valid until the next push or pop).
  const int16_t* accumulator(Color perspective);

  int ply() const { return top_; }
  int max_plies() const { return int(entries_.size()) - 1; }

 private:
  struct Entry {
    DirtyPieces dirty;  // what the move into this ply changed (nothing for a null move)
    bool computed = false;
  };
  int16_t* acc(int ply, Color c) { return acc_.data() + (size_t(ply) * 2 + size_t(c)) * stride_; }
  void materialise();  // brings entries up to the top up to date

  const Network& net_;
  size_t stride_;  // int16 values per accumulator (N rounded up to a cache line)
  AlignedI16 acc_;  // [max_plies + 1][2][stride_]: WHITE's perspective, then BLACK's
  std::vector<Entry> entries_;
  int top_ = 0;
};

}  // namespace cz::nnue
