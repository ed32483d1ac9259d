// The searcher's driver (search.h): iterative deepening with aspiration
// windows, limits and stop, the reports of each iteration and of the search.
#include "alphabeta/search.h"

#include <algorithm>
#include <cmath>

namespace cz::ab {

namespace {
constexpr uint64_t kCheckInterval = 1024;  // nodes between two looks at the limits
}

Searcher::Searcher(size_t hash_mb, std::shared_ptr<const nnue::Network> net, const SearchParams& params)
    : params_(params), tt_(hash_mb), eval_(std::move(net)) {
  history_.clear();
  for (int d = 0; d < 64; ++d)
    for (int m = 0; m < 64; ++m)
      lmr_[d][m] = d && m ? int(params_.lmr_base + std::log(d) * std::log(m) / params_.lmr_div) : 0;
}

void Searcher::clear() {
  tt_.clear();
  history_.clear();
}

void Searcher::set_hash(size_t mb) { tt_.resize(mb); }

int64_t Searcher::elapsed_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_)
      .count();
}

void Searcher::check_limits() {
  next_check_ = nodes_ + kCheckInterval;
  if (limits_.nodes) next_check_ = std::min(next_check_, limits_.nodes);
  if (stop_.load(std::memory_order_relaxed)) stopped_ = true;
  if (limits_.nodes && nodes_ >= limits_.nodes) stopped_ = true;
  if (limits_.movetime_ms && elapsed_us() >= limits_.movetime_ms * 1000) stopped_ = true;
}

void Searcher::update_pv(int ply, Move m) {
  pv_[ply][0] = m;
  const int child = pv_len_[ply + 1];
  for (int i = 0; i < child; ++i) pv_[ply][i + 1] = pv_[ply + 1][i];
  pv_len_[ply] = child + 1;
}

SearchReport Searcher::report(int score, int depth) const {
  SearchReport r;
  r.has_score = true;
  r.score = score;
  r.depth = depth;
  r.seldepth = seldepth_;
  r.nodes = nodes_;
  const int64_t us = std::max<int64_t>(elapsed_us(), 1);
  r.time_ms = us / 1000;
  r.nps = uint64_t(double(nodes_) * 1e6 / double(us));
  r.pv.assign(pv_[0], pv_[0] + pv_len_[0]);
  r.best = r.pv.empty() ? root_best_ : r.pv[0];
  return r;
}

// The expected reply: the line's second move, else the table's move after best.
Move Searcher::ponder_move(const Position& root, const std::vector<Move>& pv) {
  if (pv.size() >= 2) return pv[1];
  if (pv.empty()) return MOVE_NONE;
  Position next = root;
  next.play(pv[0]);
  TTHit hit;
  tt_.probe(next.key(), hit);
  return hit.found && !hit.move.is_none() && next.is_legal(hit.move) ? hit.move : MOVE_NONE;
}

SearchReport Searcher::search(const Position& root, const std::vector<Key>& history, const Limits& limits,
                              const InfoFn& on_info) {
  start_ = std::chrono::steady_clock::now();
  limits_ = limits;
  stop_.store(false, std::memory_order_relaxed);
  stopped_ = false;
  nodes_ = 0;
  next_check_ = 0;  // look at the limits at the first node
  seldepth_ = 0;
  root_best_ = completed_best_ = MOVE_NONE;
  tt_.new_search();
  history_.age();

  // Only positions since the last irreversible move can repeat.
  const size_t keep = std::min(history.size(), size_t(root.halfmove_clock()));
  keys_.assign(history.end() - keep, history.end());
  base_ = int(keep);
  keys_.resize(keep + kMaxPly + 2);
  frames_[0] = Frame{};
  frames_[0].plies_from_null = base_;
  eval_.reset(root);

  MoveList legal;
  root.legal_moves(legal);
  if (legal.size == 0) {  // checkmate or stalemate: nothing to search
    SearchReport r;
    r.has_score = true;
    r.score = root.in_check() ? mated_in(0) : kDraw;
    return r;
  }

  const int max_depth = limits.depth > 0 ? std::min(limits.depth, kMaxDepth) : kMaxDepth;
  SearchReport best;
  int score = 0;
  for (int depth = 1; depth <= max_depth; ++depth) {
    int delta = params_.aspiration_delta;
    int alpha = -kInfinite, beta = kInfinite;
    if (depth >= params_.aspiration_min_depth && best.has_score && !is_mate_score(score)) {
      alpha = std::max(score - delta, -kInfinite);
      beta = std::min(score + delta, kInfinite);
    }
    int s;
    while (true) {
      s = pvs<true>(root, alpha, beta, depth, 0);
      if (stopped_) break;
      if (s <= alpha) {
        beta = (alpha + beta) / 2;
        alpha = std::max(s - delta, -kInfinite);
      } else if (s >= beta) {
        beta = std::min(s + delta, kInfinite);
      } else {
        break;
      }
      delta += delta / 2;
    }
    if (stopped_) break;
    score = s;
    best = report(score, depth);
    completed_best_ = best.best;
    best.ponder = ponder_move(root, best.pv);
    if (on_info) on_info(best);
    if (stop_.load(std::memory_order_relaxed)) break;  // e.g. stopped from on_info
    // A mate seen with several plies of depth to spare will not get shorter:
    // a limited search answers now (an infinite one keeps going until stop).
    if (!limits.infinite && is_mate_score(score) && depth >= kMate - std::abs(score) + kMateSpareDepth) break;
  }

  if (!best.has_score) {
    // Stopped before depth 1 completed: the best root move so far, or the
    // first in search order.
    best = SearchReport{};
    MovePicker picker(root, legal, MOVE_NONE, nullptr, history_, false);
    best.best = root_best_.is_none() ? picker.next() : root_best_;
    best.pv = {best.best};
  }
  const int64_t us = std::max<int64_t>(elapsed_us(), 1);
  best.nodes = nodes_;
  best.seldepth = seldepth_;
  best.time_ms = us / 1000;
  best.nps = uint64_t(double(nodes_) * 1e6 / double(us));
  return best;
}

}  // namespace cz::ab
