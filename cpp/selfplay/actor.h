// Layer 6 (self-play): an actor advances many self-play games at once and
// batches the network evaluations of all their trees.
//
//   Actor a(options);
//   a.set_limits({visits, ply_cap, resign_threshold});
//   loop: n = a.prepare(planes, cap); (network) error = a.submit(logits, wdl);
//         a.take_finished(out);
//   a.set_accepting(false); flush outstanding batches; a.drain(out)  // unfinished games
//
// Game lifecycle (SPEC 6): a new game takes the next queued resumption if
// any; else, with probability restart_fraction, the next queued restart start
// (the restart archive lives in Python and feeds that queue); else, with
// probability odds_fraction, a material-odds start (a random opening, then
// material taken from one side: selfplay/odds.h); else a random opening of
// 0..8 uniformly random plies, or with probability random_opponent_fraction
// such an opening played on against a uniformly random mover (options.h).
// Prefix plies are not searched. Each
// searched position is recorded; the move is sampled by temperature; the
// chosen subtree is kept. A non-continuation game resigns when root value
// and best child Q are both <= the threshold. A game reaching the ply cap gets
// one more full search at the cut position whose root value is the cap value.
// PlayLimits can restore the paper's earlier design (6.1): cheap tail searches
// from a game ply on, and the cap value from the preceding search. With
// playout-cap randomisation (full_search_fraction < 1) only the full searches
// are recorded; fast ones are played without noise and never resign.
#pragma once

#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "search/batch.h"
#include "search/tree.h"
#include "selfplay/game_log.h"
#include "selfplay/options.h"

namespace cz {

// A game to start: `game` holds the start position plus prefix and already
// played (resumed) moves; the first `prefix_len` of its moves are the prefix.
struct StartSpec {
  std::string id;      // empty: the actor names it
  Game game;
  int prefix_len = 0;
  StartKind start = StartKind::RANDOM;
  int continuation = -1;  // 1 / 0 forced, -1 drawn with continuation_fraction
};

// A leaf of the oldest outstanding batch: its game and every move from the
// game's start position to the leaf (prefix, game moves, tree path).
struct LeafInfo {
  int slot = 0;
  std::string id;
  std::string start_fen;
  std::vector<std::string> moves;
};

struct ActorCounters {
  int64_t evaluations = 0;  // network evaluations applied
  int64_t searches = 0;     // searches finished
  int64_t fast_searches = 0;  // of which fast (playout-cap randomisation: not recorded)
  int64_t policy_moves = 0;   // of those, raw-policy moves against the random mover
  int64_t terminal_hits = 0;  // traversals ended at a terminal node (no evaluation)
  int64_t collisions = 0;   // traversals abandoned (every choice already waiting)
  int64_t batches = 0;      // batches answered
  int64_t games_started = 0;
  int64_t games_finished = 0;
};

class Actor {
 public:
  explicit Actor(const ActorOptions& options);

  const ActorOptions& options() const { return opt_; }
  const PlayLimits& limits() const { return limits_; }
  // New limits apply to searches begun afterwards.
  void set_limits(const PlayLimits& limits);
  // When false, finished games leave their slot empty instead of starting anew.
  void set_accepting(bool accepting) { accepting_ = accepting; }
  bool accepting() const { return accepting_; }

  void queue_resume(StartSpec spec) { resumes_.push_back(std::move(spec)); }
  void queue_restart(StartSpec spec) { restarts_.push_back(std::move(spec)); }
  size_t queued_restarts() const { return restarts_.size(); }
  size_t queued_resumes() const { return resumes_.size(); }

  int outstanding() const { return ring_.outstanding(); }
  int max_outstanding() const { return ring_.max_outstanding(); }
  int active_games() const;

  // Collects up to `capacity` leaves from all trees into planes[capacity][52*64].
  int prepare(float* planes, int capacity);
  // Answers the oldest outstanding batch, with one moves-left estimate
  // (plies) per row or null. Empty when applied; else why (logits, wdl,
  // moves_left) cannot answer it, and nothing changed.
  std::string submit(const float* logits, const float* wdl, const float* moves_left = nullptr);
  // Moves finished games into `out` (appended).
  void take_finished(std::vector<GameLog>& out);
  // Hands back every unfinished game (Termination::NONE) and empties its slot,
  // and every queued resumption not started yet. Needs no outstanding batch.
  void drain(std::vector<GameLog>& out);

  const ActorCounters& counters() const { return counters_; }
  // Diagnostics: what the rows of the oldest outstanding batch are.
  void describe_oldest(std::vector<LeafInfo>& out) const;

 private:
  struct Slot {
    bool active = false;
    Game game;
    Tree tree;
    GameLog log;
    int prefix_len = 0;
    bool cap_search = false;
    bool tail_search = false;
    bool fast_search = false;  // playout-cap randomisation: played, not recorded
    bool policy_move = false;  // random_opponent_policy_fraction: the top prior is played (fast_search too)
    int random_side = -1;      // Color of the random mover (StartKind::RANDOM_OPPONENT), else -1
    std::chrono::steady_clock::time_point started;
  };

  void start_game(Slot& s);
  void start_from(Slot& s, StartSpec& spec);
  void random_opening(Slot& s);
  void odds_opening(Slot& s);  // a random opening when 16 draws found no odds position
  void begin_search(Slot& s);
  // The random mover's turns (before the ply cap); false when they ended the game.
  bool play_random_turns(Slot& s);
  // Plays `m` in the game, its log and its tree; false when it ended the game.
  bool play_move(Slot& s, Move m);
  void finish_search(Slot& s);
  void record_search(Slot& s, const RootSummary& sum);
  void end_game(Slot& s, Termination ending, GameResult result);
  void advance(Slot& s);  // finish a done search (and start the next), if any

  ActorOptions opt_;
  PlayLimits limits_;
  bool accepting_ = true;
  std::vector<Slot> slots_;
  std::deque<StartSpec> resumes_;
  std::deque<StartSpec> restarts_;
  std::vector<GameLog> finished_;
  std::vector<RootChild> kids_;     // scratch
  std::vector<int> order_;          // scratch
  NodeArena scratch_;
  BatchRing ring_;
  AnswerBuffer answers_;
  Rng rng_;                         // actor-level choices (openings, flags, start types)
  int cursor_ = 0;
  int64_t next_id_ = 0;
  ActorCounters counters_;
};

}  // namespace cz
