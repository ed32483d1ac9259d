// Alpha-beta layer: the evaluator seam. The search drives exactly this shape,
// the one of nnue::EvalStack (docs/nnue.md section 4):
//
//   reset(root)            once per search, before the root is evaluated
//   push(before, move)     before recursing into the position after `move`
//   push_null()            before recursing into a null move
//   pop()                  after returning from either
//   evaluate(pos)          centipawns, side to move's view, of the position
//                          the stack stands on
//
// It holds either an NNUE network's accumulator stack (nnue/eval.h; the
// network is shared, immutable, and kept alive by the evaluator) or, without
// a network, the control evaluator (control_eval.h): one branch per method.
#pragma once

#include <memory>
#include <utility>

#include "alphabeta/control_eval.h"
#include "nnue/eval.h"

namespace cz::ab {

class Evaluator {
 public:
  Evaluator() = default;
  explicit Evaluator(std::shared_ptr<const nnue::Network> net)
      : net_(std::move(net)), nnue_(net_ ? std::make_unique<nnue::EvalStack>(*net_) : nullptr) {}

  bool uses_nnue() const { return nnue_ != nullptr; }
  void reset(const Position& root) { nnue_ ? nnue_->reset(root) : control_.reset(root); }
  void push(const Position& before, Move m) { nnue_ ? nnue_->push(before, m) : control_.push(before, m); }
  void push_null() { nnue_ ? nnue_->push_null() : control_.push_null(); }
  void pop() { nnue_ ? nnue_->pop() : control_.pop(); }
  int evaluate(const Position& pos) {
    // Mate scores stay out of reach of any static evaluation.
    const int v = nnue_ ? nnue_->evaluate(pos) : control_.evaluate(pos);
    return v >= kMateInMaxPly ? kMateInMaxPly - 1 : v <= -kMateInMaxPly ? -kMateInMaxPly + 1 : v;
  }

 private:
  std::shared_ptr<const nnue::Network> net_;
  std::unique_ptr<nnue::EvalStack> nnue_;
  ControlStack control_;
};

}  // namespace cz::ab
