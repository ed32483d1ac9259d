// Layer 6 (self-play): actor options (fixed for an actor's life) and play
// limits (given per call: they follow the generation schedules).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "search/options.h"

namespace cz {

struct ActorOptions {
  // Games advanced concurrently by one actor (their leaves share batches).
  int num_games = 256;
  // Leaf batches that may wait for the network at once (2 = double buffering).
  int max_outstanding = 2;
  // Seed of every random choice (openings, noise, move sampling, flags).
  uint64_t seed = 0;
  // Search options of every tree (self-play preset by default).
  SearchOptions search = SearchOptions::self_play();
  // Move choice: temperature schedule by game ply, greedy after a ply.
  MoveChoiceOptions choice{};
  // Random-opening starts play a uniform number of uniformly random legal
  // plies in [random_opening_min_plies, random_opening_max_plies] (not searched).
  int random_opening_min_plies = 0;
  int random_opening_max_plies = 8;
  // Share of new games started from the restart queue (random opening when it is empty).
  float restart_fraction = 0.5f;
  // Share of the other new games started from a material-odds position: a
  // random opening, then pieces worth odds_min_material..odds_max_material
  // pawns (uniform; P 1, N 3, B 3, R 5, Q 9) taken from a random side; every
  // ply is searched and trained on (a curriculum of decisive, lopsided games;
  // not in the paper). 0: off.
  float odds_fraction = 0.0f;
  int odds_min_material = 3;
  int odds_max_material = 39;
  // Share of the games started neither from the queues nor from odds that are
  // played against a uniformly random mover (this project's addition: the
  // lopsided positions where the raw policy stalemates instead of mating,
  // which self-play between equals rarely reaches). After the random
  // opening, the side to move searches every move; the other side plays a
  // uniformly random legal move (no search, no row). The searching side's
  // moves are fast searches (fast_visits, no noise, no row) until it leads by
  // random_opponent_min_lead pawns of material (P 1, N 3, B 3, R 5, Q 9), then
  // full recorded searches (min_lead 0: every move); such a game never
  // resigns and is not calibration evidence. A random-mover turn at the ply
  // cap gets the cap search. random_opponent_fraction 0: off.
  float random_opponent_fraction = 0.0f;
  int random_opponent_min_lead = 5;
  // In a game against the random mover, the share of the searching side's
  // moves played by the network's raw policy (the top prior of a one-visit
  // search: no search, no noise, no row), so that the recorded full searches
  // start from the positions the raw policy itself reaches (DAgger: the
  // learner's states, the search's targets). 0: off.
  float random_opponent_policy_fraction = 0.0f;
  // Playout-cap randomisation (KataGo): each move gets the full search with
  // probability full_search_fraction and is recorded (a training row);
  // otherwise a fast search of min(fast_visits, visits) visits without root
  // noise is played and not recorded. The ply-cap search is always full.
  // 1: every move full (off).
  float full_search_fraction = 1.0f;
  int fast_visits = 8;
  // Share of new games designated never to resign (calibration evidence).
  float continuation_fraction = 0.2f;
  // Most policy-target entries kept per searched position (SPEC 5: 60).
  int policy_entries = 60;
  // Prefix of the ids of games the actor starts itself ("<prefix>-<n>").
  std::string id_prefix = "g";

  std::string validate() const;
};

struct PlayLimits {
  // Root visits per searched position, retained ones included (the visit cap).
  int visits = 300;
  // A game reaching this many plies (prefix included) ends with a cap search.
  int ply_cap = 150;
  // Resign when root value and best child Q are both <= this; NaN disables.
  float resign_threshold = NAN;
  // The paper's earlier (affected) late-tail design (6.1), off by default.
  // From this game ply on (prefix included; -1: off) searches are cheap,
  // max(2, visits / tail_visits_divisor) visits, and recorded as tail
  // searches (is_tail: no training row). The cap search stays a full search.
  int tail_from_ply = -1;
  int tail_visits_divisor = 1;
  // A game reaching the ply cap gets no cap search: its cap value is the
  // preceding recorded search's root value, sign reversed (the paper's
  // affected run). A game that reaches the cap without a recorded search in
  // this call (resumed at or past the cap) still gets the cap search.
  bool cap_from_preceding = false;

  std::string validate() const;
};

}  // namespace cz
