// Batched independent searches with tree reuse across a game's moves.
#include "search/searcher.h"

#include <algorithm>
#include <cassert>

namespace cz {

Searcher::Searcher(int num_slots, const SearchOptions& options, uint64_t seed, int max_outstanding)
    : options_(options), ring_(max_outstanding) {
  slots_.reserve(size_t(num_slots));
  for (int i = 0; i < num_slots; ++i)
    slots_.push_back(Slot{Tree(options, seed + 0x9E3779B97F4A7C15ULL * uint64_t(i + 1)), {}, 0,
                          false, false});
}

void Searcher::clear(int slot) {
  slots_[slot].has_tree = false;
  slots_[slot].searching = false;
}

void Searcher::start(int slot, const Game& game, int visits, bool noise) {
  assert(ring_.outstanding() == 0);
  Slot& s = slots_[slot];
  const std::vector<Move>& moves = game.moves();
  bool extends = s.has_tree && s.start_key == game.start_position().key() &&
                 moves.size() >= s.moves.size() &&
                 std::equal(s.moves.begin(), s.moves.end(), moves.begin());
  if (extends) {
    for (size_t i = s.moves.size(); i < moves.size(); ++i) s.tree.advance(moves[i], scratch_);
  } else {
    s.tree.reset(game);
  }
  s.moves = moves;
  s.start_key = game.start_position().key();
  s.has_tree = true;
  s.searching = true;
  s.tree.begin_search(visits, noise);
}

int Searcher::active() const {
  int n = 0;
  for (const Slot& s : slots_) n += s.searching;
  return n;
}

int Searcher::prepare(float* planes, int capacity) {
  assert(!ring_.full());
  LeafBatch& batch = ring_.open();
  const int num = int(slots_.size());
  collect_leaves(
      batch, planes, capacity, num, cursor_, [&](int i) -> const Tree& { return slots_[i].tree; },
      [&](int i) -> Tree* {
        Slot& s = slots_[i];
        if (s.searching && s.tree.done()) s.searching = false;
        return s.searching ? &s.tree : nullptr;
      },
      [](Traversal::Kind) {});
  cursor_ = num > 0 ? (cursor_ + 1) % num : 0;
  if (!batch.empty()) ring_.commit();
  return int(batch.size());
}

std::string Searcher::submit(const float* logits, const float* wdl, const float* moves_left) {
  assert(ring_.outstanding() > 0);
  const LeafBatch& batch = ring_.oldest();
  std::string error = answers_.apply(batch, logits, wdl, moves_left, [&](uint32_t slot) -> Tree& { return slots_[slot].tree; });
  if (!error.empty()) return error;
  for (const LeafRef& r : batch) {
    Slot& s = slots_[r.slot];
    if (s.searching && s.tree.done()) s.searching = false;
  }
  ring_.pop();
  return {};
}

void Searcher::describe_oldest(std::vector<std::pair<uint32_t, std::vector<Move>>>& out) const {
  out.clear();
  if (ring_.outstanding() == 0) return;
  for (const LeafRef& r : ring_.oldest()) {
    out.emplace_back(r.slot, std::vector<Move>{});
    slots_[r.slot].tree.path_to(r.node, out.back().second);
  }
}

}  // namespace cz
