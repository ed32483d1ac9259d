// The one pybind11 bindings file: thin wrappers over the native core.
// Errors from parsing become ValueError subclasses quoting the bad input and
// the FEN; batch functions release the GIL and write into numpy buffers.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/encoding.h"
#include "core/game.h"

namespace py = pybind11;
using namespace cz;

namespace {

struct ChessErrorCpp : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct InvalidFenCpp : ChessErrorCpp {
  using ChessErrorCpp::ChessErrorCpp;
};
struct IllegalMoveCpp : ChessErrorCpp {
  using ChessErrorCpp::ChessErrorCpp;
};
struct InvalidActionCpp : ChessErrorCpp {
  using ChessErrorCpp::ChessErrorCpp;
};

// Quotes user input for error messages: non-printable bytes become \xNN so
// the message survives the trip into a Python exception intact.
std::string quote(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string out = "'";
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "'";
}

Game game_from_fen(const std::optional<std::string>& fen) {
  Game g;
  if (!fen) return g;
  std::string error;
  if (!Game::from_fen(*fen, g, error))
    throw InvalidFenCpp("invalid FEN " + quote(*fen) + ": " + error);
  return g;
}

Move parse_move(const Game& g, const std::string& uci) {
  Move m;
  std::string error;
  if (!g.position().parse_uci(uci, m, error))
    throw IllegalMoveCpp(error + " " + quote(uci) + " in position '" + g.position().fen() + "'");
  return m;
}

Move checked_action(const Game& g, int action) {
  if (action < 0 || action >= kNumActions)
    throw InvalidActionCpp("action " + std::to_string(action) + " is outside 0.." +
                           std::to_string(kNumActions - 1));
  Move m = move_of(g.position(), action);
  if (m.is_none())
    throw IllegalMoveCpp("action " + std::to_string(action) + " is not a legal move in position '" +
                         g.position().fen() + "'");
  return m;
}

// Validates a caller-provided output buffer: dtype, C-contiguity, shape.
template <typename T>
T* checked_out(py::array& out, const std::vector<py::ssize_t>& shape, const char* what) {
  if (!py::isinstance<py::array_t<T>>(out) || !(out.flags() & py::array::c_style) ||
      !out.writeable())
    throw py::value_error(std::string(what) + ": out must be a writeable C-contiguous " +
                          py::str(py::dtype::of<T>()).cast<std::string>() + " array");
  if (out.ndim() != py::ssize_t(shape.size()))
    throw py::value_error(std::string(what) + ": out has the wrong number of dimensions");
  for (size_t i = 0; i < shape.size(); ++i)
    if (out.shape(i) != shape[i]) throw py::value_error(std::string(what) + ": out has the wrong shape");
  return static_cast<T*>(out.mutable_data());
}

std::vector<const Game*> game_pointers(const py::sequence& games) {
  std::vector<const Game*> ptrs;
  ptrs.reserve(games.size());
  for (py::handle h : games) {
    if (!py::isinstance<Game>(h))
      throw py::type_error("expected chesszero.core.Game items, got " +
                           py::str(py::type::handle_of(h)).cast<std::string>());
    ptrs.push_back(h.cast<const Game*>());
  }
  return ptrs;
}

py::array_t<float> planes_array(py::ssize_t n) { return py::array_t<float>({n, py::ssize_t(kNumPlanes), py::ssize_t(8), py::ssize_t(8)}); }

}  // namespace

// ============================================================================
// Search and self-play bindings (owned by the search / self-play engineer).
// Helpers first; bind_search() is called at the end of PYBIND11_MODULE.
// prepare / submit release the GIL; a per-object mutex keeps two Python
// threads from driving the same tree set at once.
// ============================================================================
#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "search/searcher.h"
#include "selfplay/actor.h"

namespace {

// Registers readwrite fields and remembers their names for keyword construction.
template <class T>
struct FieldBinder {
  py::class_<T>& cls;
  std::unordered_set<std::string>& names;
  template <class M>
  FieldBinder& field(const char* name, M T::*member, const char* doc) {
    cls.def_readwrite(name, member, doc);
    names.insert(name);
    return *this;
  }
};

template <class T>
std::unordered_set<std::string>& field_names() {
  static std::unordered_set<std::string> names;
  return names;
}

// A T with defaults, then every keyword applied as a field (unknown keys are errors).
template <class T>
T from_kwargs(const py::kwargs& kw, const char* what) {
  py::object obj = py::cast(T{});
  for (auto item : kw) {
    std::string key = py::str(item.first);
    if (!field_names<T>().count(key))
      throw py::value_error(std::string(what) + ": unknown option '" + key + "'");
    obj.attr(key.c_str()) = item.second;
  }
  return obj.cast<T>();
}

template <class T>
py::object fields_repr(const py::object& self, const char* name) {
  std::vector<std::string> keys(field_names<T>().begin(), field_names<T>().end());
  std::sort(keys.begin(), keys.end());
  std::string out = std::string(name) + "(";
  for (size_t i = 0; i < keys.size(); ++i) {
    py::object value = self.attr(keys[i].c_str());
    std::string text = py::isinstance<py::float_>(value)  // float32 fields: 6 significant digits
                           ? py::str("{:.6g}").attr("format")(value).cast<std::string>()
                           : py::repr(value).cast<std::string>();
    out += (i ? ", " : "") + keys[i] + "=" + text;
  }
  return py::str(out + ")");
}

void require(const std::string& error, const char* what) {
  if (!error.empty()) throw py::value_error(std::string(what) + ": " + error);
}

// The caller's planes buffer: float32, C-contiguous, writeable, (B, 52, 8, 8), B >= 1.
float* planes_buffer(py::array& out, int& capacity, const char* what) {
  if (!py::isinstance<py::array_t<float>>(out) || !(out.flags() & py::array::c_style) ||
      !out.writeable())
    throw py::value_error(std::string(what) + ": out_planes must be a writeable C-contiguous float32 array");
  if (out.ndim() != 4 || out.shape(1) != kNumPlanes || out.shape(2) != 8 || out.shape(3) != 8 ||
      out.shape(0) < 1)
    throw py::value_error(std::string(what) + ": out_planes must have shape (B >= 1, 52, 8, 8), got ndim " +
                          std::to_string(out.ndim()));
  capacity = int(std::min<py::ssize_t>(out.shape(0), 1 << 20));
  return static_cast<float*>(out.mutable_data());
}

using FloatRows = py::array_t<float, py::array::c_style | py::array::forcecast>;

// Network outputs for a batch of n rows: logits (n, 1880) and WDL probabilities (n, 3)
// (shapes only: the tree owner's submit checks the values before it applies any).
std::pair<FloatRows, FloatRows> network_rows(const py::handle& logits, const py::handle& wdl, size_t n,
                                             const char* what) {
  FloatRows l = FloatRows::ensure(logits), w = FloatRows::ensure(wdl);
  if (!l || !w) throw py::value_error(std::string(what) + ": logits and wdl must be float arrays");
  if (l.ndim() != 2 || size_t(l.shape(0)) != n || l.shape(1) != kNumActions)
    throw py::value_error(std::string(what) + ": logits must have shape (" + std::to_string(n) + ", 1880)");
  if (w.ndim() != 2 || size_t(w.shape(0)) != n || w.shape(1) != 3)
    throw py::value_error(std::string(what) + ": wdl must have shape (" + std::to_string(n) + ", 3)");
  return {l, w};
}

struct PySearcher {
  Searcher s;
  std::mutex mu;
  std::vector<size_t> sizes;  // rows of each outstanding batch, oldest first
};

struct PyActor {
  Actor a;
  std::mutex mu;
  std::vector<size_t> sizes;
};

std::vector<std::string> uci_moves(Position pos, const std::vector<Move>& moves) {
  std::vector<std::string> out;
  for (Move m : moves) {
    out.push_back(pos.uci(m));
    pos.play(m);
  }
  return out;
}

py::dict root_summary(Tree& tree, int pv_len) {
  std::vector<RootChild> kids;
  const RootSummary s = tree.summarize(kids);
  const Position& root = tree.root_position();
  py::list moves, actions, visits, targets, priors, q;
  for (const RootChild& k : kids) {
    moves.append(root.uci(k.move));
    actions.append(k.action);
    visits.append(k.visits);
    targets.append(k.target);
    priors.append(k.prior);
    q.append(k.q);
  }
  std::vector<Move> pv;
  tree.principal_variation(pv, pv_len);
  py::dict d;
  d["visits"] = s.visits;
  d["value"] = s.value;
  d["raw_value"] = s.raw_value;
  d["best_q"] = s.best_q;
  d["surprise"] = s.surprise;
  d["best"] = s.best >= 0 ? py::object(py::str(root.uci(kids[s.best].move))) : py::object(py::none());
  d["moves"] = moves;
  d["actions"] = actions;
  d["child_visits"] = visits;
  d["child_targets"] = targets;
  d["priors"] = priors;
  d["q"] = q;
  d["pv"] = uci_moves(root, pv);
  d["collisions"] = tree.collisions();
  d["nodes"] = tree.node_count();
  return d;
}

template <class T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> out(py::ssize_t(v.size()));
  if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(T));
  return out;
}

StartSpec start_spec(const Game& game, int prefix_len, const std::string& id, bool restart,
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
  spec.restart = restart;
  spec.continuation = continuation ? int(*continuation) : -1;
  return spec;
}

void bind_options(py::module_& m) {
  py::class_<SearchOptions> so(m, "SearchOptions",
                               "Options of one search tree (defaults: self-play, SPEC 6).");
  FieldBinder<SearchOptions>{so, field_names<SearchOptions>()}
      .field("c_puct", &SearchOptions::c_puct, "PUCT exploration constant")
      .field("fpu_reduction", &SearchOptions::fpu_reduction, "unvisited child Q = parent value - this")
      .field("dirichlet_epsilon", &SearchOptions::dirichlet_epsilon, "root noise weight (0 = off)")
      .field("dirichlet_alpha", &SearchOptions::dirichlet_alpha, "root noise concentration")
      .field("forced_playout_k", &SearchOptions::forced_playout_k, "forced while N < sqrt(k P N_root); 0 = off")
      .field("discount", &SearchOptions::discount, "backed-up value factor per ply")
      .field("subtree_retention", &SearchOptions::subtree_retention, "share of statistics kept on reuse")
      .field("leaves_per_tree", &SearchOptions::leaves_per_tree, "in-flight traversals per tree")
      .field("virtual_loss", &SearchOptions::virtual_loss, "loss counted per in-flight traversal");
  so.def(py::init([](const py::kwargs& kw) { return from_kwargs<SearchOptions>(kw, "SearchOptions"); }))
      .def_static("self_play", &SearchOptions::self_play)
      .def_static("evaluation", &SearchOptions::evaluation)
      .def("validate", [](const SearchOptions& o) { require(o.validate(), "SearchOptions"); })
      .def("__repr__", [](const py::object& self) { return fields_repr<SearchOptions>(self, "SearchOptions"); });

  py::enum_<MoveChoice>(m, "MoveChoice")
      .value("SAMPLE", MoveChoice::SAMPLE)
      .value("MOST_VISITS", MoveChoice::MOST_VISITS)
      .value("POLICY", MoveChoice::POLICY);

  py::class_<MoveChoiceOptions> mc(m, "MoveChoiceOptions", "How the move to play is chosen.");
  FieldBinder<MoveChoiceOptions>{mc, field_names<MoveChoiceOptions>()}
      .field("mode", &MoveChoiceOptions::mode, "SAMPLE, MOST_VISITS or POLICY")
      .field("temperature", &MoveChoiceOptions::temperature, "piecewise-linear (ply, T) points")
      .field("greedy_after_ply", &MoveChoiceOptions::greedy_after_ply, "SAMPLE is greedy from this ply");
  mc.def(py::init([](const py::kwargs& kw) { return from_kwargs<MoveChoiceOptions>(kw, "MoveChoiceOptions"); }))
      .def("temperature_at", &MoveChoiceOptions::temperature_at, py::arg("ply"))
      .def("validate", [](const MoveChoiceOptions& o) { require(o.validate(), "MoveChoiceOptions"); })
      .def("__repr__", [](const py::object& self) { return fields_repr<MoveChoiceOptions>(self, "MoveChoiceOptions"); });

  py::class_<ActorOptions> ao(m, "ActorOptions", "Options of a self-play actor (fixed for its life).");
  FieldBinder<ActorOptions>{ao, field_names<ActorOptions>()}
      .field("num_games", &ActorOptions::num_games, "games advanced concurrently")
      .field("max_outstanding", &ActorOptions::max_outstanding, "batches waiting for the network at once")
      .field("seed", &ActorOptions::seed, "seed of every random choice")
      .field("search", &ActorOptions::search, "SearchOptions of every tree")
      .field("choice", &ActorOptions::choice, "MoveChoiceOptions (temperature schedule)")
      .field("random_opening_min_plies", &ActorOptions::random_opening_min_plies, "fewest random plies")
      .field("random_opening_max_plies", &ActorOptions::random_opening_max_plies, "most random plies")
      .field("restart_fraction", &ActorOptions::restart_fraction, "share of starts from the restart queue")
      .field("continuation_fraction", &ActorOptions::continuation_fraction, "share of never-resigning games")
      .field("policy_entries", &ActorOptions::policy_entries, "policy-target entries kept per position")
      .field("id_prefix", &ActorOptions::id_prefix, "prefix of the ids of games the actor starts");
  ao.def(py::init([](const py::kwargs& kw) { return from_kwargs<ActorOptions>(kw, "ActorOptions"); }))
      .def("validate", [](const ActorOptions& o) { require(o.validate(), "ActorOptions"); })
      .def("__repr__", [](const py::object& self) { return fields_repr<ActorOptions>(self, "ActorOptions"); });
}

void bind_searcher(py::module_& m) {
  py::class_<PySearcher>(m, "Searcher", "Batched searches of independent positions.")
      .def(py::init([](int num_slots, const SearchOptions& options, uint64_t seed, int max_outstanding) {
             if (num_slots < 1 || num_slots > 65536) throw py::value_error("num_slots must be in 1..65536");
             if (max_outstanding < 1 || max_outstanding > 16)
               throw py::value_error("max_outstanding must be in 1..16");
             require(options.validate(), "SearchOptions");
             return new PySearcher{Searcher(num_slots, options, seed, max_outstanding), {}, {}};
           }),
           py::arg("num_slots"), py::arg("options"), py::arg("seed") = 0, py::arg("max_outstanding") = 2)
      .def_property_readonly("num_slots", [](PySearcher& p) { return p.s.num_slots(); })
      .def_property_readonly("outstanding", [](PySearcher& p) { return p.s.outstanding(); })
      .def_property_readonly("active", [](PySearcher& p) { return p.s.active(); })
      .def("start",
           [](PySearcher& p, int slot, const Game& game, int visits, bool noise) {
             std::lock_guard<std::mutex> lock(p.mu);
             if (slot < 0 || slot >= p.s.num_slots()) throw py::value_error("slot " + std::to_string(slot) + " is out of range");
             if (visits < 1 || visits > 100000000) throw py::value_error("visits must be >= 1, got " + std::to_string(visits));
             if (p.s.outstanding() > 0) throw py::value_error("start: batches are still outstanding");
             if (game.status().is_over()) throw py::value_error("cannot search a finished game: '" + game.position().fen() + "'");
             p.s.start(slot, game, visits, noise);
           },
           py::arg("slot"), py::arg("game"), py::arg("visits"), py::arg("noise") = false)
      .def("clear", [](PySearcher& p, int slot) {
             std::lock_guard<std::mutex> lock(p.mu);
             if (slot < 0 || slot >= p.s.num_slots()) throw py::value_error("slot out of range");
             p.s.clear(slot);
           }, py::arg("slot"))
      .def("prepare_batch",
           [](PySearcher& p, py::array out_planes) {
             int cap = 0;
             float* dst = planes_buffer(out_planes, cap, "prepare_batch");
             py::gil_scoped_release release;
             std::lock_guard<std::mutex> lock(p.mu);
             if (p.s.outstanding() >= p.s.max_outstanding())
               throw py::value_error("prepare_batch: max_outstanding batches already wait for results");
             int n = p.s.prepare(dst, cap);
             if (n > 0) p.sizes.push_back(size_t(n));
             return n;
           },
           py::arg("out_planes"))
      .def("submit_results",
           [](PySearcher& p, const py::handle& logits, const py::handle& wdl) {
             std::lock_guard<std::mutex> lock(p.mu);
             if (p.sizes.empty()) throw py::value_error("submit_results: no batch is outstanding");
             auto [l, w] = network_rows(logits, wdl, p.sizes.front(), "submit_results");
             std::string error;
             {
               py::gil_scoped_release release;
               error = p.s.submit(l.data(), w.data());
             }
             require(error, "submit_results");
             p.sizes.erase(p.sizes.begin());
           },
           py::arg("logits"), py::arg("wdl"))
      .def("result",
           [](PySearcher& p, int slot, int pv_len) {
             std::lock_guard<std::mutex> lock(p.mu);
             if (slot < 0 || slot >= p.s.num_slots()) throw py::value_error("slot out of range");
             if (!p.s.tree(slot).root_expanded()) throw py::value_error("slot " + std::to_string(slot) + " has no evaluated root");
             return root_summary(p.s.tree(slot), pv_len);
           },
           py::arg("slot"), py::arg("pv_len") = 16)
      .def("choose_move",
           [](PySearcher& p, int slot, const MoveChoiceOptions& choice, int ply) {
             std::lock_guard<std::mutex> lock(p.mu);
             require(choice.validate(), "MoveChoiceOptions");
             if (slot < 0 || slot >= p.s.num_slots()) throw py::value_error("slot out of range");
             Tree& t = p.s.tree(slot);
             if (!t.root_expanded()) throw py::value_error("slot " + std::to_string(slot) + " has no evaluated root");
             std::vector<RootChild> kids;
             return t.root_position().uci(t.choose_move(choice, ply, kids));
           },
           py::arg("slot"), py::arg("choice"), py::arg("ply") = 0)
      .def("describe_batch",
           [](PySearcher& p) {
             std::lock_guard<std::mutex> lock(p.mu);
             py::list out;
             if (p.s.outstanding() == 0) return out;
             std::vector<std::pair<uint32_t, std::vector<Move>>> rows;
             p.s.describe_oldest(rows);
             for (auto& [slot, path] : rows)
               out.append(py::make_tuple(slot, uci_moves(p.s.tree(int(slot)).root_position(), path)));
             return out;
           },
           "(slot, moves from the slot's root) of each row of the oldest outstanding batch");
}

void bind_actor(py::module_& m) {
  py::class_<GameLog>(m, "GameLog", "A self-play game as the actor recorded it (see selfplay.records).")
      .def_readonly("id", &GameLog::id)
      .def_readonly("start_fen", &GameLog::start_fen)
      .def_readonly("prefix", &GameLog::prefix)
      .def_readonly("moves", &GameLog::moves)
      .def_readonly("restart", &GameLog::restart)
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

  py::class_<PyActor>(m, "Actor", "Self-play actor: many games, one batch protocol.")
      .def(py::init([](const ActorOptions& options) {
             require(options.validate(), "ActorOptions");
             return new PyActor{Actor(options), {}, {}};
           }),
           py::arg("options"))
      .def_property_readonly("options", [](PyActor& p) { return p.a.options(); })
      .def_property_readonly("outstanding", [](PyActor& p) { return p.a.outstanding(); })
      .def_property_readonly("max_outstanding", [](PyActor& p) { return p.a.max_outstanding(); })
      .def_property_readonly("active_games", [](PyActor& p) { return p.a.active_games(); })
      .def_property_readonly("queued_restarts", [](PyActor& p) { return p.a.queued_restarts(); })
      .def_property_readonly("queued_resumes", [](PyActor& p) { return p.a.queued_resumes(); })
      .def_property("accepting", [](PyActor& p) { return p.a.accepting(); },
                    [](PyActor& p, bool v) { std::lock_guard<std::mutex> lock(p.mu); p.a.set_accepting(v); })
      .def("set_limits",
           [](PyActor& p, int visits, int ply_cap, std::optional<float> resign_threshold) {
             PlayLimits l;
             l.visits = visits;
             l.ply_cap = ply_cap;
             l.resign_threshold = resign_threshold ? *resign_threshold : NAN;
             require(l.validate(), "set_limits");
             std::lock_guard<std::mutex> lock(p.mu);
             p.a.set_limits(l);
           },
           py::arg("visits"), py::arg("ply_cap"), py::arg("resign_threshold") = py::none())
      .def("queue_resume",
           [](PyActor& p, const Game& game, int prefix_len, const std::string& id, bool restart, bool continuation) {
             if (id.empty()) throw py::value_error("queue_resume: a resumed game needs its id");
             StartSpec spec = start_spec(game, prefix_len, id, restart, continuation);
             std::lock_guard<std::mutex> lock(p.mu);
             p.a.queue_resume(std::move(spec));
           },
           py::arg("game"), py::arg("prefix_len"), py::arg("id"), py::arg("restart"), py::arg("continuation"))
      .def("queue_restart",
           [](PyActor& p, const Game& game, const std::string& id) {
             StartSpec spec = start_spec(game, game.ply(), id, true, std::nullopt);
             std::lock_guard<std::mutex> lock(p.mu);
             p.a.queue_restart(std::move(spec));
           },
           py::arg("game"), py::arg("id") = "",
           "Queue a restart start: all of `game`'s moves are the unsearched prefix.")
      .def("prepare_batch",
           [](PyActor& p, py::array out_planes) {
             int cap = 0;
             float* dst = planes_buffer(out_planes, cap, "prepare_batch");
             py::gil_scoped_release release;
             std::lock_guard<std::mutex> lock(p.mu);
             if (p.a.outstanding() >= p.a.max_outstanding())
               throw py::value_error("prepare_batch: max_outstanding batches already wait for results");
             int n = p.a.prepare(dst, cap);
             if (n > 0) p.sizes.push_back(size_t(n));
             return n;
           },
           py::arg("out_planes"))
      .def("submit_results",
           [](PyActor& p, const py::handle& logits, const py::handle& wdl) {
             std::lock_guard<std::mutex> lock(p.mu);
             if (p.sizes.empty()) throw py::value_error("submit_results: no batch is outstanding");
             auto [l, w] = network_rows(logits, wdl, p.sizes.front(), "submit_results");
             std::string error;
             {
               py::gil_scoped_release release;
               error = p.a.submit(l.data(), w.data());
             }
             require(error, "submit_results");
             p.sizes.erase(p.sizes.begin());
           },
           py::arg("logits"), py::arg("wdl"))
      .def("take_finished",
           [](PyActor& p) {
             std::lock_guard<std::mutex> lock(p.mu);
             std::vector<GameLog> out;
             p.a.take_finished(out);
             return out;
           })
      .def("drain",
           [](PyActor& p) {
             std::lock_guard<std::mutex> lock(p.mu);
             if (p.a.outstanding() > 0) throw py::value_error("drain: submit the outstanding batches first");
             std::vector<GameLog> out;
             p.a.drain(out);
             return out;
           })
      .def("counters",
           [](PyActor& p) {
             const ActorCounters& c = p.a.counters();
             py::dict d;
             d["evaluations"] = c.evaluations;
             d["searches"] = c.searches;
             d["terminal_hits"] = c.terminal_hits;
             d["collisions"] = c.collisions;
             d["batches"] = c.batches;
             d["games_started"] = c.games_started;
             d["games_finished"] = c.games_finished;
             return d;
           })
      .def("describe_batch",
           [](PyActor& p) {
             std::lock_guard<std::mutex> lock(p.mu);
             std::vector<LeafInfo> rows;
             p.a.describe_oldest(rows);
             py::list out;
             for (const LeafInfo& r : rows) out.append(py::make_tuple(r.slot, r.id, r.start_fen, r.moves));
             return out;
           },
           "(slot, game id, start fen, moves from the start to the leaf) of each row of the oldest batch");
}

void bind_search(py::module_& m) {
  bind_options(m);
  bind_searcher(m);
  bind_actor(m);
}

}  // namespace
// ============================ end of search helpers ============================

PYBIND11_MODULE(_core, m) {
  m.doc() = "chesszero native core: board, rules, encoding (see chesszero.core)";
  init_bitboards();

  static py::exception<ChessErrorCpp> chess_error(m, "ChessError", PyExc_ValueError);
  py::register_exception<InvalidFenCpp>(m, "InvalidFenError", chess_error.ptr());
  py::register_exception<IllegalMoveCpp>(m, "IllegalMoveError", chess_error.ptr());
  py::register_exception<InvalidActionCpp>(m, "InvalidActionError", chess_error.ptr());

  m.attr("NUM_PLANES") = kNumPlanes;
  m.attr("NUM_ACTIONS") = kNumActions;
  m.attr("PACKED_BYTES") = kPackedBytes;
  m.attr("ENCODING_VERSION") = kEncodingVersion;
  m.attr("HISTORY_MOVES") = kHistoryMoves;

  py::class_<Game>(m, "_Game")
      .def(py::init(&game_from_fen), py::arg("fen") = py::none())
      .def("_assign", [](Game& self, const Game& other) { self = other; })
      .def("push_uci", [](Game& g, const std::string& uci) { g.play(parse_move(g, uci)); })
      .def("push_action", [](Game& g, int action) { g.play(checked_action(g, action)); })
      .def("pop",
           [](Game& g) {
             if (g.moves().empty()) throw py::index_error("pop from a game with no moves");
             Move m = g.moves().back();
             g.pop();
             return g.position().uci(m);
           })
      .def("fen", [](const Game& g) { return g.position().fen(); })
      .def("start_fen", [](const Game& g) { return g.start_position().fen(); })
      .def("moves",
           [](const Game& g) {
             std::vector<std::string> out;
             for (Move mv : g.moves()) out.push_back(g.position().uci(mv));
             return out;
           })
      .def_property_readonly("ply", &Game::ply)
      .def_property_readonly("turn", [](const Game& g) { return g.position().side_to_move() == WHITE; })
      .def_property_readonly("halfmove_clock", [](const Game& g) { return g.position().halfmove_clock(); })
      .def_property_readonly("fullmove_number", [](const Game& g) { return g.position().fullmove_number(); })
      .def_property_readonly("key", [](const Game& g) { return g.position().key(); })
      .def_property_readonly("repetitions", &Game::repetitions)
      .def("is_check", [](const Game& g) { return g.position().in_check(); })
      .def("legal_uci",
           [](const Game& g) {
             MoveList list;
             g.position().legal_moves(list);
             std::vector<std::string> out;
             for (Move mv : list) out.push_back(g.position().uci(mv));
             return out;
           })
      .def("legal_actions",
           [](const Game& g) {
             int buf[MoveList::kCapacity];
             int n = legal_actions(g.position(), buf);
             py::array_t<int32_t> out(n);
             auto* p = out.mutable_data();
             for (int i = 0; i < n; ++i) p[i] = buf[i];
             return out;
           })
      .def("legal_mask",
           [](const Game& g) {
             int buf[MoveList::kCapacity];
             int n = legal_actions(g.position(), buf);
             py::array_t<bool> out(kNumActions);
             bool* p = out.mutable_data();
             std::fill(p, p + kNumActions, false);
             for (int i = 0; i < n; ++i) p[buf[i]] = true;
             return out;
           })
      .def("action_of",
           [](const Game& g, const std::string& uci) { return action_of(g.position(), parse_move(g, uci)); })
      .def("uci_of", [](const Game& g, int action) { return g.position().uci(checked_action(g, action)); })
      .def("encode",
           [](const Game& g) {
             py::array_t<float> out({py::ssize_t(kNumPlanes), py::ssize_t(8), py::ssize_t(8)});
             encode_game_planes(g, out.mutable_data());
             return out;
           })
      .def("encode_packed",
           [](const Game& g) {
             py::array_t<uint8_t> out(kPackedBytes);
             encode_game_packed(g, out.mutable_data());
             return out;
           })
      .def("_status",
           [](const Game& g) {
             GameStatus st = g.status();
             return py::make_tuple(int(st.termination), int(st.result));
           })
      .def("perft",
           [](const Game& g, int depth) {
             if (depth < 0 || depth > 12) throw py::value_error("perft depth must be in 0..12, got " + std::to_string(depth));
             py::gil_scoped_release release;
             return g.position().perft(depth);
           },
           py::arg("depth"));

  m.def(
      "encode_batch",
      [](const py::sequence& games, std::optional<py::array> out) {
        auto ptrs = game_pointers(games);
        py::ssize_t n = py::ssize_t(ptrs.size());
        py::array arr = out ? *out : py::array(planes_array(n));
        float* dst = checked_out<float>(arr, {n, kNumPlanes, 8, 8}, "encode_batch");
        {
          py::gil_scoped_release release;
          for (py::ssize_t i = 0; i < n; ++i) encode_game_planes(*ptrs[i], dst + i * kPlaneFloats);
        }
        return arr;
      },
      py::arg("games"), py::arg("out") = py::none());
  m.def(
      "encode_packed_batch",
      [](const py::sequence& games, std::optional<py::array> out) {
        auto ptrs = game_pointers(games);
        py::ssize_t n = py::ssize_t(ptrs.size());
        py::array arr = out ? *out : py::array(py::array_t<uint8_t>({n, py::ssize_t(kPackedBytes)}));
        uint8_t* dst = checked_out<uint8_t>(arr, {n, kPackedBytes}, "encode_packed_batch");
        {
          py::gil_scoped_release release;
          for (py::ssize_t i = 0; i < n; ++i) encode_game_packed(*ptrs[i], dst + i * kPackedBytes);
        }
        return arr;
      },
      py::arg("games"), py::arg("out") = py::none());
  m.def(
      "unpack_planes",
      [](py::array packed, std::optional<py::array> out) {
        if (!py::isinstance<py::array_t<uint8_t>>(packed) || packed.ndim() != 2 ||
            packed.shape(1) != kPackedBytes)
          throw py::value_error("unpack_planes: packed must be a uint8 array of shape (N, 332)");
        py::array src = py::array_t<uint8_t, py::array::c_style>::ensure(packed);
        py::ssize_t n = src.shape(0);
        py::array arr = out ? *out : py::array(planes_array(n));
        float* dst = checked_out<float>(arr, {n, kNumPlanes, 8, 8}, "unpack_planes");
        const uint8_t* s = static_cast<const uint8_t*>(src.data());
        {
          py::gil_scoped_release release;
          for (py::ssize_t i = 0; i < n; ++i) unpack_planes(s + i * kPackedBytes, dst + i * kPlaneFloats);
        }
        return arr;
      },
      py::arg("packed"), py::arg("out") = py::none());
  m.def("mirror_action", [](int a) {
    if (a < 0 || a >= kNumActions) throw InvalidActionCpp("action " + std::to_string(a) + " is outside 0..1879");
    return mirror_action(a);
  });
  m.def("mirror_action_table", []() {
    py::array_t<int32_t> out(kNumActions);
    for (int a = 0; a < kNumActions; ++a) out.mutable_data()[a] = mirror_action(a);
    return out;
  });
  m.def("mirror_planes", [](py::array planes) {
    if (!py::isinstance<py::array_t<float>>(planes) || planes.ndim() != 4 || planes.shape(1) != kNumPlanes ||
        planes.shape(2) != 8 || planes.shape(3) != 8)
      throw py::value_error("mirror_planes: expected a float32 array of shape (N, 52, 8, 8)");
    py::array_t<float> out = py::array_t<float, py::array::c_style>::ensure(planes);
    py::array_t<float> copy(std::vector<py::ssize_t>(out.shape(), out.shape() + 4));
    std::memcpy(copy.mutable_data(), out.data(), sizeof(float) * out.size());
    float* p = copy.mutable_data();
    for (py::ssize_t i = 0; i < copy.shape(0); ++i) mirror_planes(p + i * kPlaneFloats);
    return copy;
  });
  m.def("mirror_packed", [](py::array packed) {
    if (!py::isinstance<py::array_t<uint8_t>>(packed) || packed.ndim() != 2 || packed.shape(1) != kPackedBytes)
      throw py::value_error("mirror_packed: expected a uint8 array of shape (N, 332)");
    py::array_t<uint8_t> src = py::array_t<uint8_t, py::array::c_style>::ensure(packed);
    py::array_t<uint8_t> copy({src.shape(0), py::ssize_t(kPackedBytes)});
    std::memcpy(copy.mutable_data(), src.data(), src.size());
    for (py::ssize_t i = 0; i < copy.shape(0); ++i) mirror_packed(copy.mutable_data() + i * kPackedBytes);
    return copy;
  });
  m.def("action_info", [](int a) -> py::tuple {
    if (a < 0 || a >= kNumActions) throw InvalidActionCpp("action " + std::to_string(a) + " is outside 0..1879");
    ActionInfo i = action_info(a);
    py::object promo = py::none();
    if (i.promo >= 0) promo = py::str(std::string(1, "nbrq"[i.promo - KNIGHT]));
    return py::make_tuple(i.from, i.to, promo);
  });

  // ---- search and self-play (owned by the search / self-play engineer) ----
  bind_search(m);
}
