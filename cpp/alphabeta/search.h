// Alpha-beta layer: the searcher. Single-threaded iterative deepening with
// aspiration windows over a principal-variation search (negamax.cpp):
// transposition table, quiescence search with SEE pruning, null-move
// pruning, late-move reductions and pruning, reverse futility and futility
// pruning, check extension, killer and history move ordering, mate scores by
// distance, and draws by repetition (the game's history and the search
// line), the fifty-move rule, stalemate and insufficient material.
//
// Every position visited in the main search and the quiescence search counts
// as a node. Limits (params.h) are checked every 1024 nodes, the node limit
// exactly; stop() may be called from any thread while search() runs. The
// best move returned is that of the last completed iteration; a search
// stopped before depth 1 completes returns the best root move found so far,
// or the first move in search order (a legal move whenever one exists).
//
// No heap allocation per node: positions are copied on the stack (copy-make),
// the move lists, picker and line arrays live on the stack or in the object.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <vector>

#include "alphabeta/evaluator.h"
#include "alphabeta/movepick.h"
#include "alphabeta/params.h"
#include "alphabeta/tt.h"

namespace cz::ab {

// One completed iteration, or the final answer of a search.
struct SearchReport {
  Move best = MOVE_NONE;    // none only when the root has no legal move
  Move ponder = MOVE_NONE;  // the expected reply, when known
  bool has_score = false;   // false when not even depth 1 completed
  int score = 0;            // side to move's view; a mate score when is_mate_score()
  int depth = 0;            // last completed iteration
  int seldepth = 0;         // deepest ply reached (quiescence included)
  uint64_t nodes = 0;
  int64_t time_ms = 0;
  uint64_t nps = 0;
  std::vector<Move> pv;     // from the root, best first
};

class Searcher {
 public:
  using InfoFn = std::function<void(const SearchReport&)>;

  // `net`: the NNUE network to evaluate with; null: the control evaluator.
  explicit Searcher(size_t hash_mb, std::shared_ptr<const nnue::Network> net = nullptr,
                    const SearchParams& params = {});
  bool uses_nnue() const { return eval_.uses_nnue(); }

  // Searches `root`; `history` holds the keys of the game's earlier positions,
  // oldest first (root excluded), for repetitions. on_info, if set, is called
  // after each completed iteration, on the searching thread.
  SearchReport search(const Position& root, const std::vector<Key>& history, const Limits& limits,
                      const InfoFn& on_info = {});
  void stop() { stop_.store(true, std::memory_order_relaxed); }  // any thread
  void clear();                  // new game: empty table and history
  void set_hash(size_t mb);      // resizes and clears the table
  size_t hash_mb() const { return tt_.size_mb(); }
  const SearchParams& params() const { return params_; }

 private:
  struct Frame {
    int eval = kNoScore;     // static eval (kNoScore in check)
    Move move = MOVE_NONE;   // the move searched from this ply (kNullMove: a null move)
    int plies_from_null = 0; // plies since the last null move (or since the history began)
  };
  static constexpr Move kNullMove{65};  // a1a1-like: never a legal move

  template <bool PV>
  int pvs(const Position& pos, int alpha, int beta, int depth, int ply);
  template <bool PV>
  int qsearch(const Position& pos, int alpha, int beta, int ply);
  bool is_draw(const Position& pos, int ply) const;
  void update_pv(int ply, Move m);
  void check_limits();
  int64_t elapsed_us() const;
  SearchReport report(int score, int depth) const;
  Move ponder_move(const Position& root, const std::vector<Move>& pv);

  SearchParams params_;
  TranspositionTable tt_;
  History history_;
  Evaluator eval_;
  int lmr_[64][64];

  // Per search.
  Limits limits_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> stop_{false};
  bool stopped_ = false;
  uint64_t nodes_ = 0, next_check_ = 0;
  int seldepth_ = 0;
  std::vector<Key> keys_;  // game history, then one key per ply of the line
  int base_ = 0;           // index in keys_ of the root
  Move root_best_ = MOVE_NONE;       // best root move of the running iteration
  Move completed_best_ = MOVE_NONE;  // of the last completed iteration
  Frame frames_[kMaxPly + 4];
  Move pv_[kMaxPly + 2][kMaxPly + 2];
  int pv_len_[kMaxPly + 2] = {};
};

}  // namespace cz::ab
