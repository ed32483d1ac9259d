// Search bindings: SearchOptions, MoveChoiceOptions and the batched Searcher.
// prepare / submit release the GIL; a per-object mutex keeps two Python
// threads from driving the same tree set at once.
#include <mutex>

#include "bindings/common.h"
#include "search/searcher.h"

namespace czb {
namespace {

struct PySearcher {
  Searcher s;
  std::mutex mu;
  std::vector<size_t> sizes;  // rows of each outstanding batch, oldest first
};

py::dict root_summary(Tree& tree, int pv_len) {
  std::vector<RootChild> kids;
  const RootSummary s = tree.summarize(kids);
  const Position& root = tree.root_position();
  py::list moves, actions, visits, targets, priors, q, proven, plies;
  auto result = [](int p) { return p == -2 ? py::object(py::none()) : py::object(py::int_(p)); };
  for (const RootChild& k : kids) {
    moves.append(root.uci(k.move));
    actions.append(k.action);
    visits.append(k.visits);
    targets.append(k.target);
    priors.append(k.prior);
    q.append(k.q);
    proven.append(result(k.proven));
    plies.append(k.plies);
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
  d["child_proven"] = proven;
  d["child_plies"] = plies;
  d["proven"] = result(s.proven);
  d["proven_plies"] = s.plies;
  d["pv"] = uci_moves(root, pv);
  d["collisions"] = tree.collisions();
  d["nodes"] = tree.node_count();
  d["seldepth"] = tree.seldepth();
  d["mean_depth"] = tree.mean_depth();
  return d;
}

}  // namespace

void bind_search(py::module_& m) {
  py::class_<SearchOptions> so(m, "SearchOptions",
                               "Options of one search tree (defaults: self-play, SPEC 6).");
  FieldBinder<SearchOptions>{so}
      .field("c_puct", &SearchOptions::c_puct, "PUCT exploration constant")
      .field("fpu_reduction", &SearchOptions::fpu_reduction, "unvisited child Q = parent value - this")
      .field("dirichlet_epsilon", &SearchOptions::dirichlet_epsilon, "root noise weight (0 = off)")
      .field("dirichlet_alpha", &SearchOptions::dirichlet_alpha, "root noise concentration")
      .field("forced_playout_k", &SearchOptions::forced_playout_k, "forced while N < sqrt(k P N_root); 0 = off")
      .field("discount", &SearchOptions::discount, "backed-up value factor per ply")
      .field("subtree_retention", &SearchOptions::subtree_retention, "share of statistics kept on reuse")
      .field("leaves_per_tree", &SearchOptions::leaves_per_tree, "in-flight traversals per tree")
      .field("virtual_loss", &SearchOptions::virtual_loss, "loss counted per in-flight traversal")
      .field("proven_results", &SearchOptions::proven_results, "MCTS-solver: exact results propagate up")
      .field("twofold_draws", &SearchOptions::twofold_draws, "a repetition below the root is a draw")
      .field("draw_score", &SearchOptions::draw_score, "a draw is worth -this to the side ahead at the root");
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
  FieldBinder<MoveChoiceOptions>{mc}
      .field("mode", &MoveChoiceOptions::mode, "SAMPLE, MOST_VISITS or POLICY")
      .field("temperature", &MoveChoiceOptions::temperature, "piecewise-linear (ply, T) points")
      .field("greedy_after_ply", &MoveChoiceOptions::greedy_after_ply, "SAMPLE is greedy from this ply");
  mc.def(py::init([](const py::kwargs& kw) { return from_kwargs<MoveChoiceOptions>(kw, "MoveChoiceOptions"); }))
      .def("temperature_at", &MoveChoiceOptions::temperature_at, py::arg("ply"))
      .def("validate", [](const MoveChoiceOptions& o) { require(o.validate(), "MoveChoiceOptions"); })
      .def("__repr__", [](const py::object& self) { return fields_repr<MoveChoiceOptions>(self, "MoveChoiceOptions"); });

  py::class_<PySearcher> searcher(m, "Searcher", "Batched searches of independent positions.");
  def_batch_protocol(searcher, &PySearcher::s);
  searcher
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
      .def("proofs",
           [](PySearcher& p, int slot) {
             std::lock_guard<std::mutex> lock(p.mu);
             if (slot < 0 || slot >= p.s.num_slots()) throw py::value_error("slot out of range");
             const Tree& t = p.s.tree(slot);
             std::vector<Tree::Proof> proofs;
             t.proofs(proofs);
             py::list out;
             std::vector<Move> path;
             for (const Tree::Proof& x : proofs) {
               t.path_to(x.node, path);
               out.append(py::make_tuple(uci_moves(t.root_position(), path), x.result, x.plies));
             }
             return out;
           },
           py::arg("slot"),
           "(moves from the root, result for that node's side to move: 1 win 0 draw -1 loss, plies to "
           "the end) of every proven node of the slot's tree (diagnostics; the root has no moves)")
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

}  // namespace czb
