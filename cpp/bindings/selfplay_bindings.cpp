// Self-play bindings: ActorOptions, GameLog and the multi-game Actor.
// Every Actor method that touches its games runs with the GIL released under
// the object's mutex (common.h locked()): arguments are copied out of Python
// objects before, and results become Python objects after.
#include <cmath>
#include <mutex>
#include <tuple>

#include "bindings/common.h"
#include "selfplay/actor.h"
#include "selfplay/odds.h"

namespace czb {
namespace {

struct PyActor {
  Actor a;
  std::mutex mu;
  std::vector<size_t> sizes;  // rows of each outstanding batch, oldest first
};

StartSpec start_spec(const Game& game, int prefix_len, const std::string& id, StartKind start,
                     std::optional<bool> continuation) {
  if (prefix_len < 0 || prefix_len > game.ply())
    throw py::value_error("prefix_len " + std::to_string(prefix_len) + " is outside 0.." +
                          std::to_string(game.ply()));
  if (game.status().is_over())
    throw py::value_error("cannot start a game that is over: '" + game.position().fen() + "'");
  StartSpec spec;
  spec.id = id;
  spec.game = game;
  spec.prefix_len = prefix_len;
  spec.start = start;
  spec.continuation = continuation ? int(*continuation) : -1;
  return spec;
}

}  // namespace

void bind_selfplay(py::module_& m) {
  py::enum_<StartKind>(m, "StartKind", "How a self-play game started.")
      .value("RANDOM", StartKind::RANDOM)
      .value("RESTART", StartKind::RESTART)
      .value("ODDS", StartKind::ODDS)
      .value("RANDOM_OPPONENT", StartKind::RANDOM_OPPONENT);
  m.def(
      "odds_fen",
      [](const std::string& fen, int min_pawns, int max_pawns, uint64_t seed) {
        if (min_pawns < 1 || max_pawns > 39 || min_pawns > max_pawns)
          throw py::value_error("odds_fen: material (pawns) must satisfy 1 <= min <= max <= 39, got " +
                                std::to_string(min_pawns) + ".." + std::to_string(max_pawns));
        Position pos;
        std::string error;
        if (!Position::from_fen(fen, pos, error)) throw py::value_error("odds_fen: invalid FEN '" + fen + "': " + error);
        Rng rng(seed);
        const std::string out = odds_fen(pos, min_pawns, max_pawns, rng);
        return out.empty() ? py::object(py::none()) : py::object(py::str(out));
      },
      py::arg("fen"), py::arg("min_pawns"), py::arg("max_pawns"), py::arg("seed"),
      "A material-odds FEN drawn from `fen` (the self-play odds start), or None when too little "
      "material could be taken; not checked for legality.");
  py::class_<ActorOptions> ao(m, "ActorOptions", "Options of a self-play actor (fixed for its life).");
  FieldBinder<ActorOptions>{ao}
      .field("num_games", &ActorOptions::num_games, "games advanced concurrently")
      .field("max_outstanding", &ActorOptions::max_outstanding, "batches waiting for the network at once")
      .field("seed", &ActorOptions::seed, "seed of every random choice")
      .field("search", &ActorOptions::search, "SearchOptions of every tree")
      .field("choice", &ActorOptions::choice, "MoveChoiceOptions (temperature schedule)")
      .field("random_opening_min_plies", &ActorOptions::random_opening_min_plies, "fewest random plies")
      .field("random_opening_max_plies", &ActorOptions::random_opening_max_plies, "most random plies")
      .field("restart_fraction", &ActorOptions::restart_fraction, "share of starts from the restart queue")
      .field("odds_fraction", &ActorOptions::odds_fraction, "share of other starts from material-odds positions")
      .field("odds_min_material", &ActorOptions::odds_min_material, "fewest pawns an odds start takes")
      .field("odds_max_material", &ActorOptions::odds_max_material, "most pawns an odds start takes")
      .field("random_opponent_fraction", &ActorOptions::random_opponent_fraction,
             "share of other starts played against a uniformly random mover")
      .field("random_opponent_min_lead", &ActorOptions::random_opponent_min_lead,
             "material lead (pawns) from which the searching side's moves are recorded")
      .field("random_opponent_policy_fraction", &ActorOptions::random_opponent_policy_fraction,
             "share of the searching side's moves against the random mover played by the raw policy")
      .field("full_search_fraction", &ActorOptions::full_search_fraction, "playout-cap randomisation: share of full (recorded) searches")
      .field("fast_visits", &ActorOptions::fast_visits, "visits of a fast (unrecorded) search")
      .field("continuation_fraction", &ActorOptions::continuation_fraction, "share of never-resigning games")
      .field("policy_entries", &ActorOptions::policy_entries, "policy-target entries kept per position")
      .field("id_prefix", &ActorOptions::id_prefix, "prefix of the ids of games the actor starts");
  ao.def(py::init([](const py::kwargs& kw) { return from_kwargs<ActorOptions>(kw, "ActorOptions"); }))
      .def("validate", [](const ActorOptions& o) { require(o.validate(), "ActorOptions"); })
      .def("__repr__", [](const py::object& self) { return fields_repr<ActorOptions>(self, "ActorOptions"); });

  py::class_<GameLog>(m, "GameLog", "A self-play game as the actor recorded it (see selfplay.records).")
      .def_readonly("id", &GameLog::id)
      .def_readonly("start_fen", &GameLog::start_fen)
      .def_readonly("prefix", &GameLog::prefix)
      .def_readonly("moves", &GameLog::moves)
      .def_readonly("start", &GameLog::start)
      .def_readonly("continuation", &GameLog::continuation)
      .def_property_readonly("ply", [](const GameLog& g) { return to_numpy(g.ply); })
      .def_property_readonly("policy_offsets", [](const GameLog& g) { return to_numpy(g.policy_offsets); })
      .def_property_readonly("policy_ids", [](const GameLog& g) { return to_numpy(g.policy_ids); })
      .def_property_readonly("policy_counts", [](const GameLog& g) { return to_numpy(g.policy_counts); })
      .def_property_readonly("policy_prior", [](const GameLog& g) { return to_numpy(g.policy_prior); })
      .def_property_readonly("policy_discarded", [](const GameLog& g) { return to_numpy(g.policy_discarded); })
      .def_property_readonly("root_value", [](const GameLog& g) { return to_numpy(g.root_value); })
      .def_property_readonly("raw_value", [](const GameLog& g) { return to_numpy(g.raw_value); })
      .def_property_readonly("surprise", [](const GameLog& g) { return to_numpy(g.surprise); })
      .def_property_readonly("best_q", [](const GameLog& g) { return to_numpy(g.best_q); })
      .def_property_readonly("visits", [](const GameLog& g) { return to_numpy(g.visits); })
      .def_property_readonly("is_cap", [](const GameLog& g) { return to_numpy(g.is_cap); })
      .def_property_readonly("is_tail", [](const GameLog& g) { return to_numpy(g.is_tail); })
      .def_property_readonly("ending", [](const GameLog& g) { return int(g.ending); })
      .def_property_readonly("result", [](const GameLog& g) { return int(g.result); })
      .def_readonly("resigned_by", &GameLog::resigned_by)
      .def_readonly("resign_threshold", &GameLog::resign_threshold)
      .def_readonly("cap_value", &GameLog::cap_value)
      .def_readonly("visit_cap", &GameLog::visit_cap)
      .def_readonly("ply_cap", &GameLog::ply_cap)
      .def_readonly("seconds", &GameLog::seconds)
      .def_readonly("searches", &GameLog::searches)
      .def_readonly("evaluations", &GameLog::evaluations);

  py::class_<PyActor> actor(m, "Actor", "Self-play actor: many games, one batch protocol.");
  def_batch_protocol(actor, &PyActor::a);
  actor
      .def(py::init([](const ActorOptions& options) {
             require(options.validate(), "ActorOptions");
             return new PyActor{Actor(options), {}, {}};
           }),
           py::arg("options"))
      .def_property_readonly("options", [](PyActor& p) { return locked(p, [&] { return p.a.options(); }); })
      .def_property_readonly("outstanding", [](PyActor& p) { return locked(p, [&] { return p.a.outstanding(); }); })
      .def_property_readonly("max_outstanding",
                             [](PyActor& p) { return locked(p, [&] { return p.a.max_outstanding(); }); })
      .def_property_readonly("active_games", [](PyActor& p) { return locked(p, [&] { return p.a.active_games(); }); })
      .def_property_readonly("queued_restarts",
                             [](PyActor& p) { return locked(p, [&] { return p.a.queued_restarts(); }); })
      .def_property_readonly("queued_resumes",
                             [](PyActor& p) { return locked(p, [&] { return p.a.queued_resumes(); }); })
      .def_property("accepting", [](PyActor& p) { return locked(p, [&] { return p.a.accepting(); }); },
                    [](PyActor& p, bool v) { locked(p, [&] { p.a.set_accepting(v); }); })
      .def("set_limits",
           [](PyActor& p, int visits, int ply_cap, std::optional<float> resign_threshold,
              std::optional<int> tail_from_ply, int tail_visits_divisor, bool cap_from_preceding) {
             PlayLimits l;
             l.visits = visits;
             l.ply_cap = ply_cap;
             l.resign_threshold = resign_threshold ? *resign_threshold : NAN;
             if (tail_from_ply && *tail_from_ply < 1)  // None is off; -1 is not a ply here
               throw py::value_error("set_limits: tail_from_ply must be None (off) or in 1..10000, got " +
                                     std::to_string(*tail_from_ply));
             l.tail_from_ply = tail_from_ply ? *tail_from_ply : -1;
             l.tail_visits_divisor = tail_visits_divisor;
             l.cap_from_preceding = cap_from_preceding;
             require(l.validate(), "set_limits");
             locked(p, [&] { p.a.set_limits(l); });
           },
           py::arg("visits"), py::arg("ply_cap"), py::arg("resign_threshold") = py::none(),
           py::arg("tail_from_ply") = py::none(), py::arg("tail_visits_divisor") = 1,
           py::arg("cap_from_preceding") = false)
      .def("queue_resume",
           [](PyActor& p, const Game& game, int prefix_len, const std::string& id, StartKind start,
              bool continuation) {
             if (id.empty()) throw py::value_error("queue_resume: a resumed game needs its id");
             StartSpec spec = start_spec(game, prefix_len, id, start, continuation);  // copies the game
             locked(p, [&] { p.a.queue_resume(std::move(spec)); });
           },
           py::arg("game"), py::arg("prefix_len"), py::arg("id"), py::arg("start"), py::arg("continuation"))
      .def("queue_restart",
           [](PyActor& p, const Game& game, const std::string& id) {
             StartSpec spec = start_spec(game, game.ply(), id, StartKind::RESTART, std::nullopt);  // copies the game
             locked(p, [&] { p.a.queue_restart(std::move(spec)); });
           },
           py::arg("game"), py::arg("id") = "",
           "Queue a restart start: all of `game`'s moves are the unsearched prefix.")
      .def("take_finished",
           [](PyActor& p) {
             return locked(p, [&] {
               std::vector<GameLog> out;
               p.a.take_finished(out);
               return out;
             });
           })
      .def("drain",
           [](PyActor& p) {
             return locked(p, [&] {
               if (p.a.outstanding() > 0) throw py::value_error("drain: submit the outstanding batches first");
               std::vector<GameLog> out;
               p.a.drain(out);
               return out;
             });
           })
      .def("counters",
           [](PyActor& p) {
             const ActorCounters c = locked(p, [&] { return p.a.counters(); });
             py::dict d;
             d["evaluations"] = c.evaluations;
             d["searches"] = c.searches;
             d["fast_searches"] = c.fast_searches;
             d["policy_moves"] = c.policy_moves;
             d["terminal_hits"] = c.terminal_hits;
             d["collisions"] = c.collisions;
             d["batches"] = c.batches;
             d["games_started"] = c.games_started;
             d["games_finished"] = c.games_finished;
             return d;
           })
      .def("describe_batch",
           [](PyActor& p) {
             return locked(p, [&] {
               std::vector<LeafInfo> rows;
               p.a.describe_oldest(rows);
               std::vector<std::tuple<int, std::string, std::string, std::vector<std::string>>> out;
               for (LeafInfo& r : rows) out.emplace_back(r.slot, r.id, r.start_fen, std::move(r.moves));
               return out;
             });
           },
           "(slot, game id, start fen, moves from the start to the leaf) of each row of the oldest batch");
}

}  // namespace czb
