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
// Today it holds the control evaluator (control_eval.h). Wiring the NNUE in
// is one pointer and one branch per method: hold `nnue::EvalStack* nnue_`
// (owned by the searcher, built from a loaded nnue::Network), and begin each
// method with `if (nnue_) return nnue_->f(...);`.
#pragma once

#include "alphabeta/control_eval.h"

namespace cz::ab {

class Evaluator {
 public:
  void reset(const Position& root) { control_.reset(root); }
  void push(const Position& before, Move m) { control_.push(before, m); }
  void push_null() { control_.push_null(); }
  void pop() { control_.pop(); }
  int evaluate(const Position& pos) {
    // Mate scores stay out of reach of any static evaluation.
    const int v = control_.evaluate(pos);
    return v >= kMateInMaxPly ? kMateInMaxPly - 1 : v <= -kMateInMaxPly ? -kMateInMaxPly + 1 : v;
  }

 private:
  ControlStack control_;
};

}  // namespace cz::ab
