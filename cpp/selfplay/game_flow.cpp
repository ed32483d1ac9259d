// Self-play game lifecycle: starts (resumption, restart, odds, random opening),
// endings, hand-back of unfinished games, and option checks.
#include <algorithm>

#include "selfplay/actor.h"
#include "selfplay/odds.h"

namespace cz {

std::string ActorOptions::validate() const {
  if (num_games < 1 || num_games > 65536) return "num_games must be in 1..65536";
  if (max_outstanding < 1 || max_outstanding > 16) return "max_outstanding must be in 1..16";
  if (std::string e = search.validate(); !e.empty()) return "search: " + e;
  if (std::string e = choice.validate(); !e.empty()) return "choice: " + e;
  if (random_opening_min_plies < 0 || random_opening_max_plies > 40 ||
      random_opening_min_plies > random_opening_max_plies)
    return "random opening plies must satisfy 0 <= min <= max <= 40";
  if (!(restart_fraction >= 0 && restart_fraction <= 1)) return "restart_fraction must be in [0, 1]";
  if (!(continuation_fraction >= 0 && continuation_fraction <= 1))
    return "continuation_fraction must be in [0, 1]";
  if (!(odds_fraction >= 0 && odds_fraction <= 1)) return "odds_fraction must be in [0, 1]";
  if (odds_min_material < 1 || odds_max_material > 39 || odds_min_material > odds_max_material)
    return "odds material (pawns) must satisfy 1 <= min <= max <= 39";
  if (!(random_opponent_fraction >= 0 && random_opponent_fraction <= 1))
    return "random_opponent_fraction must be in [0, 1]";
  if (random_opponent_min_lead < 0 || random_opponent_min_lead > 39)
    return "random_opponent_min_lead must be in 0..39 pawns";
  if (!(random_opponent_policy_fraction >= 0 && random_opponent_policy_fraction < 1))
    return "random_opponent_policy_fraction must be in [0, 1)";
  if (policy_entries < 1 || policy_entries > 218) return "policy_entries must be in 1..218";
  if (!(full_search_fraction > 0 && full_search_fraction <= 1)) return "full_search_fraction must be in (0, 1]";
  if (fast_visits < 1 || fast_visits > 1000000) return "fast_visits must be in 1..1000000";
  return {};
}

std::string PlayLimits::validate() const {
  if (visits < 2 || visits > 1000000) return "visits must be in 2..1000000, got " + std::to_string(visits);
  if (ply_cap < 1 || ply_cap > 10000) return "ply_cap must be in 1..10000, got " + std::to_string(ply_cap);
  if (!std::isnan(resign_threshold) && !(resign_threshold >= -1 && resign_threshold <= 1))
    return "resign_threshold must be in [-1, 1] or NaN (off)";
  if (tail_from_ply != -1 && (tail_from_ply < 1 || tail_from_ply > 10000))
    return "tail_from_ply must be -1 (off) or in 1..10000, got " + std::to_string(tail_from_ply);
  if (tail_visits_divisor < 1 || tail_visits_divisor > 1000000)
    return "tail_visits_divisor must be in 1..1000000, got " + std::to_string(tail_visits_divisor);
  return {};
}

static std::vector<std::string> uci_line(const Position& start, const std::vector<Move>& moves,
                                         size_t from, size_t to) {
  std::vector<std::string> out;
  Position p = start;
  for (size_t i = 0; i < to; ++i) {
    if (i >= from) out.push_back(p.uci(moves[i]));
    p.play(moves[i]);
  }
  return out;
}

void Actor::start_from(Slot& s, StartSpec& spec) {
  s.game = std::move(spec.game);
  s.prefix_len = spec.prefix_len;
  const std::vector<Move>& moves = s.game.moves();
  const Position& start = s.game.start_position();
  s.log.id = spec.id.empty() ? opt_.id_prefix + "-" + std::to_string(next_id_++) : spec.id;
  s.log.start_fen = start.fen();
  s.log.prefix = uci_line(start, moves, 0, size_t(spec.prefix_len));
  s.log.moves = uci_line(start, moves, size_t(spec.prefix_len), moves.size());
  s.log.start = spec.start;
  s.log.continuation = spec.continuation >= 0 ? spec.continuation == 1
                                              : rng_.bernoulli(opt_.continuation_fraction);
  if (spec.start == StartKind::RANDOM_OPPONENT) {  // the searching side moves first after the prefix
    const Color first = spec.prefix_len % 2 == 0 ? start.side_to_move() : ~start.side_to_move();
    s.random_side = int(~first);
    s.log.continuation = false;
  }
}

void Actor::random_opening(Slot& s) {
  const int lo = opt_.random_opening_min_plies, hi = opt_.random_opening_max_plies;
  for (;;) {
    s.game = Game();
    s.log.prefix.clear();
    const int plies = lo + int(rng_.below(uint32_t(hi - lo + 1)));
    bool ok = true;
    for (int i = 0; i < plies && ok; ++i) {
      MoveList list;
      s.game.position().legal_moves(list);
      const Move m = list.moves[rng_.below(uint32_t(list.size))];
      s.log.prefix.push_back(s.game.position().uci(m));
      s.game.play(m);
      ok = !s.game.status().is_over();  // a random prefix that ends the game is redrawn
    }
    if (ok) break;
  }
  s.prefix_len = s.game.ply();
  s.log.id = opt_.id_prefix + "-" + std::to_string(next_id_++);
  s.log.start_fen = s.game.start_position().fen();
  s.log.start = StartKind::RANDOM;
  s.log.continuation = rng_.bernoulli(opt_.continuation_fraction);
}

void Actor::odds_opening(Slot& s) {
  for (int attempt = 0; attempt < 16; ++attempt) {  // else the last random opening stays, unchanged
    random_opening(s);
    Game g;
    std::string error;
    const std::string fen = odds_fen(s.game.position(), opt_.odds_min_material, opt_.odds_max_material, rng_);
    if (fen.empty() || !Game::from_fen(fen, g, error) || g.status().is_over()) continue;
    s.game = std::move(g);  // the odds position is the start: no prefix, every ply searched
    s.prefix_len = 0;
    s.log.prefix.clear();
    s.log.start_fen = fen;
    s.log.start = StartKind::ODDS;
    return;
  }
}

void Actor::start_game(Slot& s) {
  s.log = GameLog{};
  s.random_side = -1;
  if (!resumes_.empty()) {
    start_from(s, resumes_.front());
    resumes_.pop_front();
  } else if (rng_.bernoulli(opt_.restart_fraction) && !restarts_.empty()) {
    start_from(s, restarts_.front());
    restarts_.pop_front();
  } else if (opt_.odds_fraction > 0 && rng_.bernoulli(opt_.odds_fraction)) {  // 0 draws nothing
    odds_opening(s);
  } else if (opt_.random_opponent_fraction > 0 && rng_.bernoulli(opt_.random_opponent_fraction)) {
    random_opening(s);
    s.log.start = StartKind::RANDOM_OPPONENT;
    s.log.continuation = false;  // never resigns, no calibration evidence
    s.random_side = int(~s.game.position().side_to_move());
  } else {
    random_opening(s);
  }
  s.active = true;
  s.started = std::chrono::steady_clock::now();
  s.tree.reset(s.game);
  ++counters_.games_started;
  begin_search(s);
}

static double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void Actor::end_game(Slot& s, Termination ending, GameResult result) {
  GameLog& g = s.log;
  g.ending = ending;
  g.result = result;
  g.resign_threshold = limits_.resign_threshold;
  g.visit_cap = limits_.visits;
  g.ply_cap = limits_.ply_cap;
  g.seconds += seconds_since(s.started);
  finished_.push_back(std::move(g));
  s.log = GameLog{};
  s.active = false;
  ++counters_.games_finished;
}

void Actor::take_finished(std::vector<GameLog>& out) {
  for (GameLog& g : finished_) out.push_back(std::move(g));
  finished_.clear();
}

void Actor::drain(std::vector<GameLog>& out) {
  for (StartSpec& spec : resumes_) {  // queued resumptions never started go back as they came
    GameLog g;
    const std::vector<Move>& moves = spec.game.moves();
    const Position& start = spec.game.start_position();
    g.id = spec.id;
    g.start_fen = start.fen();
    g.prefix = uci_line(start, moves, 0, size_t(spec.prefix_len));
    g.moves = uci_line(start, moves, size_t(spec.prefix_len), moves.size());
    g.start = spec.start;
    g.continuation = spec.continuation == 1;
    g.resign_threshold = limits_.resign_threshold;
    g.visit_cap = limits_.visits;
    g.ply_cap = limits_.ply_cap;
    out.push_back(std::move(g));
  }
  resumes_.clear();
  for (Slot& s : slots_) {
    if (!s.active) continue;
    GameLog& g = s.log;
    g.ending = Termination::NONE;
    g.resign_threshold = limits_.resign_threshold;
    g.visit_cap = limits_.visits;
    g.ply_cap = limits_.ply_cap;
    g.seconds += seconds_since(s.started);
    out.push_back(std::move(g));
    s.log = GameLog{};
    s.active = false;
  }
}

void Actor::describe_oldest(std::vector<LeafInfo>& out) const {
  out.clear();
  if (ring_.outstanding() == 0) return;
  std::vector<Move> path;
  for (const LeafRef& r : ring_.oldest()) {
    const Slot& s = slots_[r.slot];
    std::vector<Move> line = s.game.moves();
    s.tree.path_to(r.node, path);
    line.insert(line.end(), path.begin(), path.end());
    LeafInfo info;
    info.slot = int(r.slot);
    info.id = s.log.id;
    info.start_fen = s.game.start_position().fen();
    info.moves = uci_line(s.game.start_position(), line, 0, line.size());
    out.push_back(std::move(info));
  }
}

}  // namespace cz
