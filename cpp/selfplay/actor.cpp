// Self-play actor: batching across games and the search-to-move loop.
// Game starts and endings are in game_flow.cpp.
#include "selfplay/actor.h"

#include <algorithm>
#include <cassert>

#include "selfplay/odds.h"

namespace cz {

namespace {

// The raw policy's move: the highest network prior (no noise); ties keep the first.
Move top_prior(const std::vector<RootChild>& kids) {
  size_t best = 0;
  for (size_t i = 1; i < kids.size(); ++i)
    if (kids[i].prior > kids[best].prior) best = i;
  return kids[best].move;
}

}  // namespace

Actor::Actor(const ActorOptions& options)
    : opt_(options), ring_(options.max_outstanding), rng_(options.seed) {
  slots_.resize(size_t(opt_.num_games));
  for (size_t i = 0; i < slots_.size(); ++i)
    slots_[i].tree = Tree(opt_.search, opt_.seed ^ (0xD1B54A32D192ED03ULL * (i + 1)));
}

void Actor::set_limits(const PlayLimits& limits) { limits_ = limits; }

int Actor::active_games() const {
  int n = 0;
  for (const Slot& s : slots_) n += s.active;
  return n;
}

int Actor::prepare(float* planes, int capacity) {
  assert(!ring_.full());
  LeafBatch& batch = ring_.open();
  const int num = int(slots_.size());
  const int full_at = collect_leaves(
      batch, planes, capacity, num, cursor_, [&](int i) -> const Tree& { return slots_[i].tree; },
      [&](int i) -> Tree* {
        Slot& s = slots_[i];
        for (;;) {
          if (!s.active) {
            if (!accepting_) return nullptr;
            start_game(s);
          } else if (s.tree.done()) {
            finish_search(s);
          } else {
            return &s.tree;
          }
        }
      },
      [&](Traversal::Kind kind) { ++(kind == Traversal::TERMINAL ? counters_.terminal_hits : counters_.collisions); });
  // The slot that filled the batch may want more: it goes first next time.
  cursor_ = full_at >= 0 ? full_at : (cursor_ + 1) % num;
  if (!batch.empty()) ring_.commit();
  return int(batch.size());
}

std::string Actor::submit(const float* logits, const float* wdl, const float* moves_left) {
  assert(ring_.outstanding() > 0);
  const LeafBatch& batch = ring_.oldest();
  std::string error = answers_.apply(batch, logits, wdl, moves_left, [&](uint32_t slot) -> Tree& { return slots_[slot].tree; });
  if (!error.empty()) return error;
  for (const LeafRef& r : batch) ++slots_[r.slot].log.evaluations;
  counters_.evaluations += int64_t(batch.size());
  ++counters_.batches;
  for (const LeafRef& r : batch) {
    Slot& s = slots_[r.slot];
    while (s.active && s.tree.done()) finish_search(s);
  }
  ring_.pop();
  return {};
}

bool Actor::play_random_turns(Slot& s) {
  while (s.random_side >= 0 && int(s.game.position().side_to_move()) == s.random_side &&
         s.game.ply() < limits_.ply_cap) {
    MoveList list;
    s.game.position().legal_moves(list);
    // the game is not over (checked after every move): a legal move exists
    if (!play_move(s, list.moves[rng_.below(uint32_t(list.size))])) return false;
  }
  return true;
}

bool Actor::play_move(Slot& s, Move m) {
  s.log.moves.push_back(s.game.position().uci(m));
  s.game.play(m);
  s.tree.advance(m, scratch_);
  const GameStatus st = s.game.status();
  if (!st.is_over()) return true;
  end_game(s, st.termination, st.result);
  return false;
}

void Actor::begin_search(Slot& s) {
  if (!play_random_turns(s)) return;
  const int ply = s.game.ply();
  s.cap_search = ply >= limits_.ply_cap;
  s.tail_search = !s.cap_search && limits_.tail_from_ply >= 0 && ply >= limits_.tail_from_ply;
  // validated limits have a divisor >= 1; the max keeps an unvalidated one from dividing by zero
  const int cheap = std::max(2, limits_.visits / std::max(1, limits_.tail_visits_divisor));
  // Playout-cap randomisation draws only when on, so that the actor's other
  // random choices are unchanged without it.
  s.fast_search = !s.cap_search && !s.tail_search && opt_.full_search_fraction < 1.0f &&
                  !rng_.bernoulli(opt_.full_search_fraction);
  if (s.random_side >= 0 && opt_.random_opponent_min_lead > 0 && !s.cap_search && !s.fast_search) {
    // against the random mover: rows once ahead by the gate
    const Position& pos = s.game.position();
    const Color us = pos.side_to_move();
    s.fast_search = material_pawns(pos, us) - material_pawns(pos, ~us) < opt_.random_opponent_min_lead;
  }
  // Drawn only when on, so that the actor's other random choices are unchanged without it.
  s.policy_move = s.random_side >= 0 && !s.cap_search && opt_.random_opponent_policy_fraction > 0.0f &&
                  rng_.bernoulli(opt_.random_opponent_policy_fraction);
  if (s.policy_move) s.fast_search = true;  // one visit expands the root: its priors are the raw policy
  const int visits = s.policy_move ? 1
                     : s.tail_search ? cheap
                     : s.fast_search ? std::min(opt_.fast_visits, limits_.visits)
                                     : limits_.visits;
  s.tree.begin_search(visits, /*noise=*/!s.fast_search);
}

void Actor::record_search(Slot& s, const RootSummary& sum) {
  GameLog& g = s.log;
  g.ply.push_back(s.game.ply() - s.prefix_len);
  order_.clear();
  for (int i = 0; i < int(kids_.size()); ++i)
    if (kids_[i].target > 0) order_.push_back(i);
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
    return kids_[a].target > kids_[b].target ||
           (kids_[a].target == kids_[b].target && kids_[a].prior > kids_[b].prior);
  });
  const size_t keep = std::min(order_.size(), size_t(opt_.policy_entries));
  float discarded = 0;
  for (size_t j = 0; j < order_.size(); ++j) {
    const RootChild& k = kids_[order_[j]];
    if (j < keep) {
      g.policy_ids.push_back(int16_t(k.action));
      g.policy_counts.push_back(k.target);
      g.policy_prior.push_back(k.prior);
    } else {
      discarded += k.target;
    }
  }
  g.policy_offsets.push_back(int32_t(g.policy_ids.size()));
  g.policy_discarded.push_back(discarded);
  g.root_value.push_back(std::clamp(sum.value, -1.0f, 1.0f));
  g.raw_value.push_back(std::clamp(sum.raw_value, -1.0f, 1.0f));
  g.surprise.push_back(sum.surprise);
  g.best_q.push_back(std::clamp(sum.best_q, -1.0f, 1.0f));
  g.visits.push_back(sum.visits);
  g.is_cap.push_back(s.cap_search);
  g.is_tail.push_back(s.tail_search);
  ++g.searches;
  ++counters_.searches;
}

void Actor::finish_search(Slot& s) {
  const RootSummary sum = s.tree.summarize(kids_);
  if (s.fast_search) {
    ++counters_.fast_searches;
    counters_.policy_moves += s.policy_move;
    ++counters_.searches;
    ++s.log.searches;
  } else {
    record_search(s, sum);
  }
  if (s.cap_search) {
    s.log.cap_value = std::clamp(sum.value, -1.0f, 1.0f);
    end_game(s, Termination::PLY_CAP, GameResult::DRAW);
    return;
  }
  const float t = limits_.resign_threshold;
  if (!s.fast_search && !s.log.continuation && s.random_side < 0 && !std::isnan(t) && sum.value <= t &&
      sum.best_q <= t) {
    const Color loser = s.game.position().side_to_move();
    s.log.resigned_by = int(loser);
    end_game(s, Termination::RESIGNATION, loser == WHITE ? GameResult::BLACK_WINS : GameResult::WHITE_WINS);
    return;
  }
  const Move move = s.policy_move && !kids_.empty() ? top_prior(kids_) : s.tree.choose_move(opt_.choice, s.game.ply(), kids_);
  if (!play_move(s, move)) return;
  // (after a fast search, whose root value is not recorded, the cap search runs instead)
  if (limits_.cap_from_preceding && !s.fast_search && s.game.ply() >= limits_.ply_cap) {
    s.log.cap_value = -std::clamp(sum.value, -1.0f, 1.0f);  // the cut's side to move
    end_game(s, Termination::PLY_CAP, GameResult::DRAW);
    return;
  }
  begin_search(s);
}

}  // namespace cz
