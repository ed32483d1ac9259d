// Layer 5 (search): batched searches of independent positions (analysis,
// evaluation matches, the UCI engine, tests). Each slot holds one tree; a
// slot asked to search a game that extends the game it searched before keeps
// the subtree of the moves played since (tree reuse across moves).
//
//   Searcher s(num_slots, options, seed);
//   s.start(slot, game, visits);
//   while (s.active()) { n = s.prepare(planes, cap); evaluate; error = s.submit(logits, wdl); }
//   s.result(slot, ...);
#pragma once

#include <vector>

#include "search/batch.h"
#include "search/tree.h"

namespace cz {

class Searcher {
 public:
  Searcher(int num_slots, const SearchOptions& options, uint64_t seed, int max_outstanding = 2);

  int num_slots() const { return int(slots_.size()); }
  const SearchOptions& options() const { return options_; }
  int outstanding() const { return ring_.outstanding(); }
  int max_outstanding() const { return ring_.max_outstanding(); }

  // Searches `game`'s position to `visits` root visits (with root noise when
  // `noise`). Reuses the slot's tree when `game` extends its previous game.
  // The game must not be over; no batch may be outstanding.
  void start(int slot, const Game& game, int visits, bool noise);
  // Drops the slot's tree (the next start() begins afresh).
  void clear(int slot);
  int active() const;  // slots whose search has not finished

  // Collects up to `capacity` leaves into planes[capacity][52*64]; returns how many.
  int prepare(float* planes, int capacity);
  // Answers the oldest outstanding batch (rows in prepare's order), with one
  // moves-left estimate (plies) per row or null. Empty when applied; else why
  // (logits, wdl, moves_left) cannot answer it, and nothing changed.
  std::string submit(const float* logits, const float* wdl, const float* moves_left = nullptr);

  const Tree& tree(int slot) const { return slots_[slot].tree; }
  Tree& tree(int slot) { return slots_[slot].tree; }
  bool searching(int slot) const { return slots_[slot].searching; }
  // Diagnostics: (slot, moves from its root) of each row of the oldest batch.
  void describe_oldest(std::vector<std::pair<uint32_t, std::vector<Move>>>& out) const;

 private:
  struct Slot {
    Tree tree;
    std::vector<Move> moves;  // moves of the game whose position is the root
    Key start_key = 0;        // key of that game's start position
    bool has_tree = false;
    bool searching = false;
  };

  SearchOptions options_;
  std::vector<Slot> slots_;
  NodeArena scratch_;
  BatchRing ring_;
  AnswerBuffer answers_;
  int cursor_ = 0;  // slot where the next prepare() starts (fairness)
};

}  // namespace cz
