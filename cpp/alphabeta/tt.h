// Alpha-beta layer: the transposition table. Buckets of four 16-byte entries
// fill one 64-byte cache line; a position's bucket comes from the high bits
// of its Zobrist key and the entry keeps the full key, so a hit is a true hit.
// Replacement prefers, within a bucket, the shallowest and the oldest entry
// (a generation counter advances once per search). Scores are stored relative
// to the storing node (score.h to_tt), so mate distances survive transposition.
//
// Not thread-safe: one search uses a table at a time (the binding enforces it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "alphabeta/score.h"
#include "core/types.h"

namespace cz::ab {

struct TTEntry {
  uint64_t key;
  uint16_t move;
  int16_t score;     // to_tt form
  int16_t eval;      // static evaluation, kNoScore when in check
  uint8_t depth8;    // depth + kDepthOffset; 0 marks an empty entry
  uint8_t gen_bound; // generation (high 6 bits) | Bound (low 2 bits)

  static constexpr int kDepthOffset = 2;  // quiescence entries have depth 0
  int depth() const { return int(depth8) - kDepthOffset; }
  Bound bound() const { return Bound(gen_bound & 3); }
};
static_assert(sizeof(TTEntry) == 16, "TT entries are 16 bytes");

// What a probe found, copied out of the table.
struct TTHit {
  bool found = false;
  Move move = MOVE_NONE;
  int score = kNoScore;  // still in to_tt form
  int eval = kNoScore;
  int depth = -1;
  Bound bound = BOUND_NONE;
};

class TranspositionTable {
 public:
  static constexpr size_t kMinMb = 1, kMaxMb = 65536;

  explicit TranspositionTable(size_t mb) { resize(mb); }
  void resize(size_t mb);  // clears; mb within kMinMb..kMaxMb (checked by the caller)
  void clear();
  void new_search() { generation_ = uint8_t(generation_ + 4); }
  size_t size_mb() const { return mb_; }

  // The entry slot for `key`: its own entry when present (hit.found), else the
  // entry to replace. Pass the slot back to store().
  TTEntry* probe(Key key, TTHit& hit);
  void store(TTEntry* slot, Key key, int score, int eval, Bound bound, int depth, Move move);
  void prefetch(Key key) const { __builtin_prefetch(bucket(key)); }

 private:
  struct alignas(64) Bucket {
    TTEntry e[4];
  };
  Bucket* bucket(Key key) const {
    return &buckets_[size_t((static_cast<unsigned __int128>(key) * count_) >> 64)];
  }

  std::unique_ptr<Bucket[]> buckets_;
  size_t count_ = 0;
  size_t mb_ = 0;
  uint8_t generation_ = 0;
};

}  // namespace cz::ab
