// Search bindings: SearchOptions, MoveChoiceOptions and the batched Searcher.
// Every Searcher method that touches the trees runs with the GIL released
// under the object's mutex (common.h locked()): arguments are copied out of
// Python objects before, and results become Python objects after.
#include <cmath>
#include <mutex>
#include <tuple>

#include "bindings/common.h"
#include "search/gumbel.h"
#include "search/leaf_material.h"
#include "search/searcher.h"

namespace czb {
namespace {

struct PySearcher {
  Searcher s;
  std::mutex mu;
  std::vector<size_t> sizes;  // rows of each outstanding batch, oldest first
};

// A slot's search result in C++ values, taken under the lock.
struct RootReport {
  RootSummary summary;
  std::vector<RootChild> kids;
  std::vector<std::string> moves;  // UCI of each child
  std::vector<std::string> pv;
  uint64_t collisions = 0;
  size_t nodes = 0;
  int seldepth = 0;
  float mean_depth = 0;
};

RootReport root_report(const Tree& tree, int pv_len) {
  RootReport r;
  r.summary = tree.summarize(r.kids);
  const Position& root = tree.root_position();
  for (const RootChild& k : r.kids) r.moves.push_back(root.uci(k.move));
  std::vector<Move> pv;
  tree.principal_variation(pv, pv_len);
  r.pv = uci_moves(root, pv);
  r.collisions = tree.collisions();
  r.nodes = tree.node_count();
  r.seldepth = tree.seldepth();
  r.mean_depth = tree.mean_depth();
  return r;
}

py::dict root_summary(const RootReport& r) {
  const RootSummary& s = r.summary;
  py::list moves, actions, visits, targets, priors, q, proven, plies, considered, search_visits, gumbel, moves_left,
      utility;
  auto result = [](int p) { return p == -2 ? py::object(py::none()) : py::object(py::int_(p)); };
  for (size_t i = 0; i < r.kids.size(); ++i) {
    const RootChild& k = r.kids[i];
    moves.append(r.moves[i]);
    actions.append(k.action);
    visits.append(k.visits);
    targets.append(k.target);
    priors.append(k.prior);
    q.append(k.q);
    proven.append(result(k.proven));
    plies.append(k.plies);
    considered.append(k.considered);
    search_visits.append(k.search_visits);
    gumbel.append(k.gumbel);
    moves_left.append(k.moves_left);
    utility.append(k.utility);
  }
  py::dict d;
  d["visits"] = s.visits;
  d["value"] = s.value;
  d["raw_value"] = s.raw_value;
  d["best_q"] = s.best_q;
  d["surprise"] = s.surprise;
  d["best"] = s.best >= 0 ? py::object(py::str(r.moves[size_t(s.best)])) : py::object(py::none());
  d["moves"] = moves;
  d["actions"] = actions;
  d["child_visits"] = visits;
  d["child_targets"] = targets;
  d["priors"] = priors;
  d["q"] = q;
  d["child_proven"] = proven;
  d["child_plies"] = plies;
  d["child_considered"] = considered;        // Gumbel root: among the considered moves
  d["child_search_visits"] = search_visits;  // Gumbel root: this search's visits
  d["child_gumbel"] = gumbel;                // Gumbel root: the noise g
  d["child_moves_left"] = moves_left;        // mean plies left backed up through each move
  d["child_utility"] = utility;              // moves-left utility added to each q (0 when off)
  d["moves_left"] = s.moves_left;            // mean plies left backed up through the root
  d["proven"] = result(s.proven);
  d["proven_plies"] = s.plies;
  d["pv"] = r.pv;
  d["collisions"] = r.collisions;
  d["nodes"] = r.nodes;
  d["seldepth"] = r.seldepth;
  d["mean_depth"] = r.mean_depth;
  return d;
}

void check_slot(const Searcher& s, int slot) {
  if (slot < 0 || slot >= s.num_slots()) throw py::value_error("slot " + std::to_string(slot) + " is out of range");
}

}  // namespace

void bind_search(py::module_& m) {
  py::enum_<RootRule>(m, "RootRule", "How the root spends its visits.")
      .value("PUCT", RootRule::PUCT)
      .value("GUMBEL", RootRule::GUMBEL);
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
      .field("draw_score", &SearchOptions::draw_score, "a draw is worth -this to the side ahead at the root")
      .field("root", &SearchOptions::root, "RootRule.PUCT or RootRule.GUMBEL")
      .field("gumbel_considered", &SearchOptions::gumbel_considered, "Gumbel root: moves considered (m)")
      .field("gumbel_c_visit", &SearchOptions::gumbel_c_visit, "sigma(q) = (c_visit + max N) * c_scale * q")
      .field("gumbel_c_scale", &SearchOptions::gumbel_c_scale, "sigma(q) = (c_visit + max N) * c_scale * q")
      .field("moves_left_slope", &SearchOptions::moves_left_slope,
             "moves-left utility slope per ply (0 = off; answers then need moves_left)")
      .field("moves_left_cap", &SearchOptions::moves_left_cap, "moves-left utility: largest |effect|")
      .field("moves_left_linear", &SearchOptions::moves_left_linear, "moves-left utility: factor of |q|")
      .field("moves_left_quadratic", &SearchOptions::moves_left_quadratic, "moves-left utility: factor of q^2")
      .field("leaf_material", &SearchOptions::leaf_material,
             "leaf value = (1 - w) (W - L) + w tanh(material / scale); 0 = off")
      .field("leaf_material_scale", &SearchOptions::leaf_material_scale, "leaf material: tanh scale in pawns")
      .field("leaf_material_depth", &SearchOptions::leaf_material_depth,
             "leaf material: captures-only quiescence plies (0 = the static count)");
  so.def(py::init([](const py::kwargs& kw) { return from_kwargs<SearchOptions>(kw, "SearchOptions"); }))
      .def_static("self_play", &SearchOptions::self_play)
      .def_static("evaluation", &SearchOptions::evaluation)
      .def("validate", [](const SearchOptions& o) { require(o.validate(), "SearchOptions"); })
      .def("__repr__", [](const py::object& self) { return fields_repr<SearchOptions>(self, "SearchOptions"); });

  m.def(
      "quiescent_material",
      [](const std::string& fen, int depth) {
        if (depth < 0 || depth > kMaxLeafMaterialDepth)
          throw py::value_error("depth must be in 0..16, got " + std::to_string(depth));
        return quiescent_material(game_from_fen(fen).position(), depth);
      },
      py::arg("fen"), py::arg("depth"),
      "Material lead of the side to move in pawns after a captures-only quiescence search of `depth` plies "
      "(0: the static count): SearchOptions.leaf_material's measure.");
  m.def(
      "gumbel_halving_counts",
      [](int budget, int m) {
        if (budget < 0 || budget > 10000000) throw py::value_error("budget must be in 0..10000000, got " + std::to_string(budget));
        if (m < 1 || m > 256) throw py::value_error("m must be in 1..256, got " + std::to_string(m));
        return gumbel::halving_counts(budget, m);
      },
      py::arg("budget"), py::arg("m"),
      "Visits per rank (rank 0: the final survivor) of sequential halving of `budget` simulations over m moves.");
  m.def(
      "gumbel_improved_policy",
      [](float raw, std::vector<float> visits, std::vector<float> prior, std::vector<float> q, float c_visit,
         float c_scale) {
        const size_t k = visits.size();
        if (k < 1 || k > 256 || prior.size() != k || q.size() != k)
          throw py::value_error("visits, prior and q must have the same length in 1..256");
        std::vector<float> sigma(k), logit(k), pi(k);
        gumbel::sigma_completed(raw, visits.data(), prior.data(), q.data(), int(k), c_visit, c_scale, sigma.data());
        for (size_t i = 0; i < k; ++i) logit[i] = std::log(std::max(prior[i], 1e-30f));
        gumbel::improved_policy(logit.data(), sigma.data(), int(k), pi.data());
        const float vmix = gumbel::mixed_value(raw, visits.data(), prior.data(), q.data(), int(k));
        return std::make_tuple(pi, sigma, vmix);
      },
      py::arg("raw"), py::arg("visits"), py::arg("prior"), py::arg("q"), py::arg("c_visit") = 50.0f,
      py::arg("c_scale") = 1.0f,
      "(improved policy, sigma, v_mix) of the Gumbel root for children with these visits, priors and Q.");

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
      .def_property_readonly("num_slots", [](PySearcher& p) { return locked(p, [&] { return p.s.num_slots(); }); })
      .def_property_readonly("outstanding", [](PySearcher& p) { return locked(p, [&] { return p.s.outstanding(); }); })
      .def_property_readonly("active", [](PySearcher& p) { return locked(p, [&] { return p.s.active(); }); })
      .def("start",
           [](PySearcher& p, int slot, const Game& game, int visits, bool noise) {
             if (visits < 1 || visits > 100000000) throw py::value_error("visits must be >= 1, got " + std::to_string(visits));
             const Game copy = game;  // taken with the GIL: `game` may change once it is released
             locked(p, [&] {
               check_slot(p.s, slot);
               if (p.s.outstanding() > 0) throw py::value_error("start: batches are still outstanding");
               if (copy.status().is_over())
                 throw py::value_error("cannot search a finished game: '" + copy.position().fen() + "'");
               p.s.start(slot, copy, visits, noise);
             });
           },
           py::arg("slot"), py::arg("game"), py::arg("visits"), py::arg("noise") = false)
      .def("clear", [](PySearcher& p, int slot) {
             locked(p, [&] {
               check_slot(p.s, slot);
               p.s.clear(slot);
             });
           }, py::arg("slot"))
      .def("result",
           [](PySearcher& p, int slot, int pv_len) {
             const RootReport r = locked(p, [&] {
               check_slot(p.s, slot);
               const Tree& t = p.s.tree(slot);
               if (!t.root_expanded()) throw py::value_error("slot " + std::to_string(slot) + " has no evaluated root");
               return root_report(t, pv_len);
             });
             return root_summary(r);
           },
           py::arg("slot"), py::arg("pv_len") = 16)
      .def("choose_move",
           [](PySearcher& p, int slot, const MoveChoiceOptions& choice, int ply) {
             require(choice.validate(), "MoveChoiceOptions");
             const MoveChoiceOptions c = choice;  // a copy: `choice` is a Python object
             return locked(p, [&] {
               check_slot(p.s, slot);
               Tree& t = p.s.tree(slot);
               if (!t.root_expanded()) throw py::value_error("slot " + std::to_string(slot) + " has no evaluated root");
               std::vector<RootChild> kids;
               return t.root_position().uci(t.choose_move(c, ply, kids));
             });
           },
           py::arg("slot"), py::arg("choice"), py::arg("ply") = 0)
      .def("proofs",
           [](PySearcher& p, int slot) {
             return locked(p, [&] {
               check_slot(p.s, slot);
               const Tree& t = p.s.tree(slot);
               std::vector<Tree::Proof> proofs;
               t.proofs(proofs);
               std::vector<std::tuple<std::vector<std::string>, int, int>> out;
               std::vector<Move> path;
               for (const Tree::Proof& x : proofs) {
                 t.path_to(x.node, path);
                 out.emplace_back(uci_moves(t.root_position(), path), x.result, x.plies);
               }
               return out;
             });
           },
           py::arg("slot"),
           "(moves from the root, result for that node's side to move: 1 win 0 draw -1 loss, plies to "
           "the end) of every proven node of the slot's tree (diagnostics; the root has no moves)")
      .def("describe_batch",
           [](PySearcher& p) {
             return locked(p, [&] {
               std::vector<std::pair<uint32_t, std::vector<std::string>>> out;
               if (p.s.outstanding() == 0) return out;
               std::vector<std::pair<uint32_t, std::vector<Move>>> rows;
               p.s.describe_oldest(rows);
               for (auto& [slot, path] : rows)
                 out.emplace_back(slot, uci_moves(p.s.tree(int(slot)).root_position(), path));
               return out;
             });
           },
           "(slot, moves from the slot's root) of each row of the oldest outstanding batch");
}

}  // namespace czb
