// The transposition table (tt.h): allocation, probe and replacement.
#include "alphabeta/tt.h"

#include <cassert>
#include <cstring>

namespace cz::ab {

void TranspositionTable::resize(size_t mb) {
  assert(mb >= kMinMb && mb <= kMaxMb);
  const size_t count = mb * 1024 * 1024 / sizeof(Bucket);
  if (count != count_) {
    buckets_.reset();  // free the old table before the new one is allocated
    buckets_.reset(new Bucket[count]);
    count_ = count;
  }
  mb_ = mb;
  clear();
}

void TranspositionTable::clear() {
  std::memset(static_cast<void*>(buckets_.get()), 0, count_ * sizeof(Bucket));
  generation_ = 0;
}

TTEntry* TranspositionTable::probe(Key key, TTHit& hit) {
  TTEntry* e = bucket(key)->e;
  for (int i = 0; i < 4; ++i) {
    if (e[i].key == key && e[i].depth8) {
      // Refresh the age so a used entry outlives the ones left behind.
      e[i].gen_bound = uint8_t(generation_ | e[i].bound());
      hit.found = true;
      hit.move = Move(e[i].move);
      hit.score = e[i].score;
      hit.eval = e[i].eval;
      hit.depth = e[i].depth();
      hit.bound = e[i].bound();
      return &e[i];
    }
  }
  hit.found = false;
  // Replace the entry worth least: shallow and old (an empty entry is worth nothing).
  TTEntry* worst = &e[0];
  auto worth = [this](const TTEntry& x) {
    if (!x.depth8) return -1000;
    const int age = uint8_t(generation_ - (x.gen_bound & 0xFC)) >> 2;
    return int(x.depth8) - 8 * age;
  };
  for (int i = 1; i < 4; ++i)
    if (worth(e[i]) < worth(*worst)) worst = &e[i];
  return worst;
}

void TranspositionTable::store(TTEntry* slot, Key key, int score, int eval, Bound bound, int depth,
                               Move move) {
  const bool same = slot->key == key && slot->depth8;
  // Keep a known move rather than forget it for "no move".
  if (!same || !move.is_none()) slot->move = move.data;
  // A shallower non-exact result does not overwrite a deeper one of the same position.
  if (!same || bound == BOUND_EXACT || depth + TTEntry::kDepthOffset + 3 > slot->depth8) {
    slot->key = key;
    slot->score = int16_t(score);
    slot->eval = int16_t(eval);
    slot->depth8 = uint8_t(depth + TTEntry::kDepthOffset);
    slot->gen_bound = uint8_t(generation_ | bound);
  }
}

}  // namespace cz::ab
