// Layer 6 (self-play): what the actor records of a game, flat and
// allocation-light; Python turns it into a GameRecord row
// (chesszero/selfplay/records.py documents the meaning of every field).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/game.h"

namespace cz {

// How a self-play game started.
enum class StartKind : int {
  RANDOM = 0,   // after uniformly random opening plies
  RESTART = 1,  // from the restart queue (the archive in Python)
  ODDS = 2,     // from a material-odds position (ActorOptions::odds_fraction)
  // After a random opening, against a uniformly random mover (ActorOptions::
  // random_opponent_fraction): the side to move after the prefix searches,
  // the other side plays random legal moves, unsearched and unrecorded.
  RANDOM_OPPONENT = 3,
};

struct GameLog {
  std::string id;
  std::string start_fen;
  std::vector<std::string> prefix;  // unsearched plies (UCI)
  std::vector<std::string> moves;   // plies after the prefix (UCI), resumed ones included
  StartKind start = StartKind::RANDOM;
  bool continuation = false;        // never resigns

  // One entry per searched position; the policy of entry i is
  // policy_*[policy_offsets[i] .. policy_offsets[i + 1]).
  std::vector<int32_t> ply;
  std::vector<int32_t> policy_offsets{0};
  std::vector<int16_t> policy_ids;
  std::vector<float> policy_counts;
  std::vector<float> policy_prior;
  std::vector<float> policy_discarded;
  std::vector<float> root_value;
  std::vector<float> raw_value;
  std::vector<float> surprise;
  std::vector<float> best_q;
  std::vector<float> visits;
  std::vector<uint8_t> is_cap;
  std::vector<uint8_t> is_tail;     // cheap late-tail search (PlayLimits::tail_from_ply)

  Termination ending = Termination::NONE;  // NONE: unfinished (handed back by drain)
  GameResult result = GameResult::ONGOING;
  int resigned_by = -1;                // Color that resigned, -1 if none
  float resign_threshold = NAN;        // threshold in force, NaN when off
  float cap_value = NAN;               // cap search root value, NaN when not capped
  int visit_cap = 0;
  int ply_cap = 0;
  double seconds = 0;                  // wall time the game was in flight
  int64_t searches = 0;                // searches finished
  int64_t evaluations = 0;             // network evaluations applied

  int num_searched() const { return int(ply.size()); }
};

}  // namespace cz
