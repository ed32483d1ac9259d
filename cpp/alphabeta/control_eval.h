// Alpha-beta layer: the "control" evaluator (docs/nnue.md section 6):
// material plus piece-square tables, a middlegame and an endgame value per
// piece and square, tapered by the remaining non-pawn material. No learning:
// it is what the NNUE student is measured against under the same search.
//
// control_evaluate() computes a position from scratch. ControlStack is the
// incremental form with the evaluator shape the search drives (reset / push /
// push_null / pop / evaluate, like nnue::EvalStack): one entry per ply, a move
// adds and removes the few table values it changes. Debug builds check every
// incremental evaluation against the from-scratch one.
#pragma once

#include "alphabeta/score.h"
#include "core/position.h"

namespace cz::ab {

// Centipawns from the side to move's point of view. Colour-symmetric: a
// position and its colour-mirrored twin get the same value.
int control_evaluate(const Position& pos);

class ControlStack {
 public:
  void reset(const Position& root);
  void push(const Position& before, Move m);  // before: the position m is played in
  void push_null();
  void pop() { --top_; }
  int evaluate(const Position& pos) const;

  // White's middlegame and endgame sums and the game phase of a position.
  struct Acc {
    int mg = 0, eg = 0, phase = 0;
    bool operator==(const Acc&) const = default;
  };
  static Acc accumulate(const Position& pos);

 private:
  Acc stack_[kMaxPly + 8];
  int top_ = 0;
};

}  // namespace cz::ab
