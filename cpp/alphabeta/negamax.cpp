// The searcher's recursion (search.h): principal-variation search, the
// quiescence search, and draw detection.
//
// Every make is paired with the evaluator (push before the recursion, pop
// after, null moves included) and records the child's key for repetitions.
#include <algorithm>

#include "alphabeta/search.h"

namespace cz::ab {

namespace {

bool has_non_pawn_material(const Position& pos) {
  const Color us = pos.side_to_move();
  return pos.pieces(us) & ~pos.pieces(PAWN) & ~pos.pieces(KING);
}

// The stored score is usable as a bound on the search window at hand.
bool bound_allows(Bound b, int score, int beta) { return b & (score >= beta ? BOUND_LOWER : BOUND_UPPER); }

}  // namespace

// Draws the rules impose here (the game's own precedence: a checkmate on the
// board beats the fifty-move rule). A repetition is a draw when the earlier
// occurrence lies inside the search line (after the root), or when the
// position now occurs for the third time.
bool Searcher::is_draw(const Position& pos, int ply) const {
  if (pos.insufficient_material()) return true;
  if (pos.halfmove_clock() >= 100) return !pos.in_check() || pos.count_legal_moves() > 0;
  const int window = std::min(pos.halfmove_clock(), frames_[ply].plies_from_null);
  if (window < 4) return false;
  const Key key = pos.key();
  const int at = base_ + ply;
  int earlier = 0;
  for (int back = 4; back <= window; back += 2) {
    if (keys_[at - back] == key) {
      if (back < ply || ++earlier >= 2) return true;
    }
  }
  return false;
}

template <bool PV>
int Searcher::pvs(const Position& pos, int alpha, int beta, int depth, int ply) {
  if (depth <= 0) return qsearch<PV>(pos, alpha, beta, ply);
  if (stopped_) return 0;  // unwinding: re-searches of a stopped line visit nothing
  if (++nodes_ >= next_check_ && (check_limits(), stopped_)) return 0;
  const bool root = ply == 0;
  keys_[base_ + ply] = pos.key();
  if (PV) pv_len_[ply] = 0;
  seldepth_ = std::max(seldepth_, ply + 1);
  const bool in_check = pos.in_check();
  if (!root) {
    if (is_draw(pos, ply)) return kDraw;
    if (ply >= kMaxPly - 1) return in_check ? kDraw : eval_.evaluate(pos);
    // Mate distance pruning: no line from here beats a mate already found nearer the root.
    alpha = std::max(alpha, mated_in(ply));
    beta = std::min(beta, mate_in(ply + 1));
    if (alpha >= beta) return alpha;
  }

  TTHit tte;
  TTEntry* slot = tt_.probe(pos.key(), tte);
  const int tt_score = tte.found ? from_tt(tte.score, ply) : kNoScore;
  const Move tt_move = root && !completed_best_.is_none() ? completed_best_ : tte.move;
  if (!PV && tte.found && tte.depth >= depth && bound_allows(tte.bound, tt_score, beta)) return tt_score;

  // Static evaluation, sharpened by a stored score bound when there is one.
  int raw_eval = kNoScore, eval = kNoScore;
  if (!in_check) {
    raw_eval = tte.found && tte.eval != kNoScore ? tte.eval : eval_.evaluate(pos);
    eval = raw_eval;
    if (tte.found && !is_mate_score(tt_score) && (tte.bound & (tt_score > eval ? BOUND_LOWER : BOUND_UPPER)))
      eval = tt_score;
  }
  frames_[ply].eval = eval;
  const bool improving =
      !in_check && (ply < 2 || frames_[ply - 2].eval == kNoScore || eval > frames_[ply - 2].eval);
  const SearchParams& P = params_;

  if (!PV && !in_check) {
    // Reverse futility pruning.
    if (depth <= P.rfp_max_depth && eval < kMateInMaxPly && eval - P.rfp_margin * (depth - improving) >= beta)
      return eval;
    // Null-move pruning.
    if (depth >= P.nmp_min_depth && eval >= beta && frames_[ply - 1].move != kNullMove &&
        beta > -kMateInMaxPly && has_non_pawn_material(pos)) {
      const int r = P.nmp_base + depth / P.nmp_depth_div + std::min((eval - beta) / P.nmp_eval_div, P.nmp_eval_max);
      Position next = pos;
      next.play_null();
      tt_.prefetch(next.key());
      frames_[ply].move = kNullMove;
      frames_[ply + 1].plies_from_null = 0;
      eval_.push_null();
      const int v = -pvs<false>(next, -beta, -beta + 1, depth - 1 - r, ply + 1);
      eval_.pop();
      if (stopped_) return 0;
      if (v >= beta) return v >= kMateInMaxPly ? beta : v;  // an unproven mate is not claimed
    }
  }
  // Internal iterative reduction: no table move to lead, so search shallower first.
  if (depth >= P.iir_min_depth && tt_move.is_none()) --depth;

  MoveList list;
  pos.legal_moves(list);
  if (list.size == 0) return in_check ? mated_in(ply) : kDraw;

  Move* killers = history_.killers[ply];
  MovePicker picker(pos, list, tt_move, killers, history_, true);
  const Color us = pos.side_to_move();
  int best = -kInfinite, move_count = 0, num_quiets = 0;
  Move best_move = MOVE_NONE, quiets[64];
  for (Move m = picker.next(); !m.is_none(); m = picker.next()) {
    const bool quiet = is_quiet(pos, m);
    ++move_count;
    Position next = pos;
    next.play(m);
    tt_.prefetch(next.key());
    const bool gives_check = next.in_check();

    // Shallow pruning, once a move has kept us from being mated.
    if (!root && !in_check && best > -kMateInMaxPly) {
      if (quiet && !gives_check) {
        if (depth <= P.lmp_max_depth && move_count > (3 + depth * depth) / (2 - improving)) {
          picker.skip_quiets();
          continue;
        }
        if (depth <= P.futility_max_depth && eval + P.futility_base + P.futility_per_depth * depth <= alpha) {
          picker.skip_quiets();
          continue;
        }
      } else if (!quiet && depth <= P.see_prune_max_depth &&
                 !see_ge(pos, m, -P.see_prune_margin * depth * depth)) {
        continue;
      }
    }

    const int new_depth = depth - 1 + (gives_check && P.check_extension ? 1 : 0);
    frames_[ply].move = m;
    frames_[ply + 1].plies_from_null = frames_[ply].plies_from_null + 1;
    eval_.push(pos, m);
    int score;
    if (PV && move_count == 1) {
      score = -pvs<true>(next, -beta, -alpha, new_depth, ply + 1);
    } else {
      // Late-move reduction of quiet moves, verified at full depth when it fails high.
      int r = 0;
      if (depth >= P.lmr_min_depth && quiet && move_count > (PV ? 3 : 1) && !gives_check) {
        r = lmr_[std::min(depth, 63)][std::min(move_count, 63)];
        r += !improving - PV - (m == killers[0] || m == killers[1]);
        r -= history_.score(us, m) / P.lmr_history_div;
        r = std::clamp(r, 0, new_depth - 1);
      }
      score = -pvs<false>(next, -alpha - 1, -alpha, new_depth - r, ply + 1);
      if (r > 0 && score > alpha) score = -pvs<false>(next, -alpha - 1, -alpha, new_depth, ply + 1);
      if (PV && score > alpha) score = -pvs<true>(next, -beta, -alpha, new_depth, ply + 1);
    }
    eval_.pop();
    if (stopped_) return 0;

    if (score > best) {
      best = score;
      if (score > alpha) {
        best_move = m;
        if (PV) update_pv(ply, m);
        if (root) root_best_ = m;
        if (score >= beta) break;
        alpha = score;
      }
    }
    if (quiet && num_quiets < 64) quiets[num_quiets++] = m;
  }

  // A quiet cutoff: reward it, penalise the quiet moves tried before it.
  if (best >= beta && is_quiet(pos, best_move)) {
    const int bonus = std::min(P.history_bonus_mul * depth * depth, P.history_bonus_max);
    history_.update(us, best_move, bonus);
    for (int i = 0; i < num_quiets; ++i) history_.update(us, quiets[i], -bonus);
    history_.add_killer(ply, best_move);
  }
  const Bound bound = best >= beta ? BOUND_LOWER : PV && !best_move.is_none() ? BOUND_EXACT : BOUND_UPPER;
  tt_.store(slot, pos.key(), to_tt(best, ply), raw_eval, bound, depth, best_move);
  return best;
}

template <bool PV>
int Searcher::qsearch(const Position& pos, int alpha, int beta, int ply) {
  if (stopped_) return 0;
  if (++nodes_ >= next_check_ && (check_limits(), stopped_)) return 0;
  keys_[base_ + ply] = pos.key();
  if (PV) pv_len_[ply] = 0;
  seldepth_ = std::max(seldepth_, ply + 1);
  const bool in_check = pos.in_check();
  if (is_draw(pos, ply)) return kDraw;
  if (ply >= kMaxPly - 1) return in_check ? kDraw : eval_.evaluate(pos);

  TTHit tte;
  TTEntry* slot = tt_.probe(pos.key(), tte);
  const int tt_score = tte.found ? from_tt(tte.score, ply) : kNoScore;
  if (!PV && tte.found && bound_allows(tte.bound, tt_score, beta)) return tt_score;

  MoveList list;
  int best, raw_eval = kNoScore;
  if (in_check) {
    pos.legal_moves(list);  // every evasion, no standing pat
    if (list.size == 0) return mated_in(ply);
    best = -kInfinite;
  } else {
    raw_eval = tte.found && tte.eval != kNoScore ? tte.eval : eval_.evaluate(pos);
    best = raw_eval;
    if (tte.found && !is_mate_score(tt_score) && (tte.bound & (tt_score > best ? BOUND_LOWER : BOUND_UPPER)))
      best = tt_score;
    if (best >= beta) {
      if (!tte.found) tt_.store(slot, pos.key(), to_tt(best, ply), raw_eval, BOUND_LOWER, 0, MOVE_NONE);
      return best;
    }
    alpha = std::max(alpha, best);
    pos.legal_captures(list);
  }
  const int stand_pat = best;

  MovePicker picker(pos, list, tte.move, nullptr, history_, false);
  Move best_move = MOVE_NONE;
  for (Move m = picker.next(); !m.is_none(); m = picker.next()) {
    if (!in_check) {
      // Delta pruning, then SEE pruning of captures that lose material.
      if (m.kind() != PROMOTION && stand_pat + captured_value(pos, m) + params_.qs_delta_margin <= alpha) continue;
      if (!see_ge(pos, m, 0)) continue;
    }
    Position next = pos;
    next.play(m);
    tt_.prefetch(next.key());
    frames_[ply].move = m;
    frames_[ply + 1].plies_from_null = frames_[ply].plies_from_null + 1;
    eval_.push(pos, m);
    const int score = -qsearch<PV>(next, -beta, -alpha, ply + 1);
    eval_.pop();
    if (stopped_) return 0;
    if (score > best) {
      best = score;
      if (score > alpha) {
        best_move = m;
        if (PV) update_pv(ply, m);
        if (score >= beta) break;
        alpha = score;
      }
    }
  }
  tt_.store(slot, pos.key(), to_tt(best, ply), raw_eval, best >= beta ? BOUND_LOWER : BOUND_UPPER, 0, best_move);
  return best;
}

template int Searcher::pvs<true>(const Position&, int, int, int, int);
template int Searcher::pvs<false>(const Position&, int, int, int, int);

}  // namespace cz::ab
