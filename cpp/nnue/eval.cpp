// Refresh, the integer output and the lazy accumulator stack (see eval.h).
#include "nnue/eval.h"

#include <cassert>

#include "nnue/simd.h"

namespace cz::nnue {

void refresh(const Network& net, const Position& pos, Color perspective, int16_t* acc) {
  int features[kMaxActive];
  const int n = active_features(pos, perspective, features);
  kernels().update(net.b1.data(), acc, net.w1.data(), net.hidden, nullptr, 0, features, n);
}

int output(const Network& net, const int16_t* us, const int16_t* them) {
  const int64_t sum = kernels().output(us, them, net.w2.data(), net.hidden);
  const int64_t out = sum / kQA + net.b2;      // truncates toward zero
  return int(out * kScale / (kQA * kQB));      // truncates toward zero
}

int evaluate_full(const Network& net, const Position& pos) {
  alignas(64) int16_t us[kMaxHidden], them[kMaxHidden];
  const Color stm = pos.side_to_move();
  refresh(net, pos, stm, us);
  refresh(net, pos, ~stm, them);
  return output(net, us, them);
}

EvalStack::EvalStack(const Network& net, int max_plies)
    : net_(net),
      stride_((size_t(net.hidden) + 31) / 32 * 32),
      acc_(size_t(max_plies + 1) * 2 * stride_),
      entries_(size_t(max_plies + 1)) {
  assert(max_plies >= 0);
}

void EvalStack::reset(const Position& root) {
  top_ = 0;
  refresh(net_, root, WHITE, acc(0, WHITE));
  refresh(net_, root, BLACK, acc(0, BLACK));
  entries_[0].computed = true;
}

void EvalStack::push(const Position& before, Move m) {
  assert(top_ + 1 < int(entries_.size()) && entries_[0].computed);
  Entry& e = entries_[size_t(++top_)];
  e.dirty = dirty_pieces(before, m);
  e.computed = false;
}

void EvalStack::push_null() {
  assert(top_ + 1 < int(entries_.size()) && entries_[0].computed);
  Entry& e = entries_[size_t(++top_)];
  e.dirty = DirtyPieces{};
  e.computed = false;
}

void EvalStack::pop() {
  assert(top_ > 0);
  --top_;
}

void EvalStack::materialise() {
  if (entries_[size_t(top_)].computed) return;
  assert(entries_[0].computed);  // reset() came first
  int from = top_;
  while (!entries_[size_t(from)].computed) --from;  // entry 0 is computed by reset()
  const Kernels& k = kernels();
  const int n = net_.hidden;
  for (int ply = from + 1; ply <= top_; ++ply) {
    Entry& e = entries_[size_t(ply)];
    for (Color c : {WHITE, BLACK}) {
      int removed[2], added[2];
      const int nr = e.dirty.removed_features(c, removed);
      const int na = e.dirty.added_features(c, added);
      k.update(acc(ply - 1, c), acc(ply, c), net_.w1.data(), n, removed, nr, added, na);
    }
    e.computed = true;
  }
}

int EvalStack::evaluate(const Position& pos) {
  materialise();
  const Color stm = pos.side_to_move();
  return output(net_, acc(top_, stm), acc(top_, ~stm));
}

const int16_t* EvalStack::accumulator(Color perspective) {
  materialise();
  return acc(top_, perspective);
}

}  // namespace cz::nnue
