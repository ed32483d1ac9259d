// Alpha-beta bindings (docs/nnue.md section 7): control_evaluate and the
// AlphaBeta searcher.
//
// A search runs with the GIL released and without any C++ mutex: an atomic
// `busy` flag admits one search or table operation (clear, set_hash) at a
// time and refuses a second with RuntimeError, so the on_info callback can
// take the GIL without holding a lock (DESIGN 13). stop() touches only the
// searcher's atomic stop flag and may be called from any thread meanwhile.
#include <atomic>
#include <exception>

#include "alphabeta/control_eval.h"
#include "alphabeta/search.h"
#include "alphabeta/see.h"
#include "bindings/common.h"
#include "nnue/network.h"

namespace czb {
namespace {

struct PyAlphaBeta {
  PyAlphaBeta(size_t hash_mb, std::shared_ptr<const nnue::Network> net) : s(hash_mb, std::move(net)) {}
  ab::Searcher s;
  std::atomic<bool> busy{false};
};

// Holds the object's busy flag for one operation.
class BusyGuard {
 public:
  BusyGuard(std::atomic<bool>& busy, const char* what) : busy_(busy) {
    bool expected = false;
    if (!busy_.compare_exchange_strong(expected, true))
      throw std::runtime_error(std::string(what) +
                               ": this AlphaBeta is already searching or resizing its table in another thread");
  }
  ~BusyGuard() { busy_.store(false); }
  BusyGuard(const BusyGuard&) = delete;
  BusyGuard& operator=(const BusyGuard&) = delete;

 private:
  std::atomic<bool>& busy_;
};

size_t checked_hash_mb(long long mb, const char* what) {
  if (mb < (long long)ab::TranspositionTable::kMinMb || mb > (long long)ab::TranspositionTable::kMaxMb)
    throw py::value_error(std::string(what) + ": hash_mb must be in " +
                          std::to_string(ab::TranspositionTable::kMinMb) + ".." +
                          std::to_string(ab::TranspositionTable::kMaxMb) + ", got " + std::to_string(mb));
  return size_t(mb);
}

void check_range(long long value, long long hi, const char* name) {
  if (value < 0 || value > hi)
    throw py::value_error(std::string("AlphaBeta.search: ") + name + " must be in 0.." + std::to_string(hi) +
                          ", got " + std::to_string(value));
}

py::object uci_or_none(const Position& pos, Move m) {
  return m.is_none() ? py::object(py::none()) : py::object(py::str(pos.uci(m)));
}

// The result dict: best, ponder, score_cp, mate, depth, seldepth, nodes, nps, time_ms, pv.
py::dict report_dict(const ab::SearchReport& r, const Position& root) {
  py::dict d;
  d["best"] = uci_or_none(root, r.best);
  py::object ponder = py::none();
  if (!r.best.is_none() && !r.ponder.is_none()) {
    Position next = root;
    next.play(r.best);
    ponder = uci_or_none(next, r.ponder);
  }
  d["ponder"] = ponder;
  const bool mate = r.has_score && ab::is_mate_score(r.score);
  d["score_cp"] = r.has_score && !mate ? py::object(py::int_(r.score)) : py::object(py::none());
  d["mate"] = mate ? py::object(py::int_(ab::mate_moves(r.score))) : py::object(py::none());
  d["depth"] = r.depth;
  d["seldepth"] = r.seldepth;
  d["nodes"] = r.nodes;
  d["nps"] = r.nps;
  d["time_ms"] = r.time_ms;
  d["pv"] = uci_moves(root, r.pv);
  return d;
}

Position position_from_fen(const std::string& fen) { return game_from_fen(fen).position(); }

}  // namespace

void bind_alphabeta(py::module_& m) {
  m.def(
      "control_evaluate", [](const std::string& fen) { return ab::control_evaluate(position_from_fen(fen)); },
      py::arg("fen"),
      "The control evaluator (material + piece-square tables): centipawns from the side to move's view.");
  m.def(
      "alphabeta_see_ge",
      [](const std::string& fen, const std::string& move, int threshold) {
        Game g = game_from_fen(fen);
        return ab::see_ge(g.position(), parse_move(g, move), threshold);
      },
      py::arg("fen"), py::arg("move"), py::arg("threshold"),
      "Static exchange evaluation as the alpha-beta search uses it: does `move` win at least `threshold` cp?");

  py::class_<PyAlphaBeta>(m, "AlphaBeta",
                          "Alpha-beta searcher (docs/nnue.md): net=None searches the control evaluator, an NnueNet the network.")
      .def(py::init([](const py::object& net, long long hash_mb) {
             std::shared_ptr<const nnue::Network> network;
             if (!net.is_none()) {
               if (!py::isinstance<nnue::Network>(net))
                 throw py::type_error("AlphaBeta: net must be an NnueNet or None (the control evaluator), got " +
                                      std::string(py::str(py::type::of(net))));
               network = net.cast<std::shared_ptr<nnue::Network>>();
             }
             const size_t mb = checked_hash_mb(hash_mb, "AlphaBeta");
             py::gil_scoped_release release;  // allocating and zeroing a large table takes a while
             return std::make_unique<PyAlphaBeta>(mb, std::move(network));
           }),
           py::arg("net") = py::none(), py::arg("hash_mb") = 16)
      .def(
          "search",
          [](PyAlphaBeta& self, const std::string& fen, const std::vector<std::string>& moves, long long depth,
             long long nodes, long long movetime_ms, bool infinite, const py::object& on_info) {
            check_range(depth, ab::kMaxDepth, "depth");
            check_range(nodes, (1LL << 62), "nodes");
            check_range(movetime_ms, (1LL << 40), "movetime_ms");
            if (!depth && !nodes && !movetime_ms && !infinite)
              throw py::value_error("AlphaBeta.search: give a limit (depth, nodes or movetime_ms) or infinite=True");
            if (!on_info.is_none() && !PyCallable_Check(on_info.ptr()))
              throw py::type_error("AlphaBeta.search: on_info must be a callable or None");
            Game g = game_from_fen(fen);
            for (const std::string& uci : moves) g.play(parse_move(g, uci));
            std::vector<Key> history = g.keys();
            history.pop_back();  // the root itself
            const Position root = g.position();
            const ab::Limits limits{int(depth), uint64_t(nodes), int64_t(movetime_ms), infinite};

            BusyGuard guard(self.busy, "AlphaBeta.search");
            std::exception_ptr callback_error;
            ab::Searcher::InfoFn info;
            if (!on_info.is_none()) {
              info = [&](const ab::SearchReport& r) {
                py::gil_scoped_acquire gil;  // no C++ lock is held here
                try {
                  on_info(report_dict(r, root));
                } catch (...) {
                  if (!callback_error) callback_error = std::current_exception();
                  self.s.stop();
                }
              };
            }
            ab::SearchReport r;
            {
              py::gil_scoped_release release;
              r = self.s.search(root, history, limits, info);
            }
            if (callback_error) std::rethrow_exception(callback_error);
            return report_dict(r, root);
          },
          py::arg("fen"), py::arg("moves") = std::vector<std::string>{}, py::arg("depth") = 0,
          py::arg("nodes") = 0, py::arg("movetime_ms") = 0, py::arg("infinite") = false,
          py::arg("on_info") = py::none(),
          "Searches fen after the UCI moves; returns best, ponder, score_cp, mate, depth, seldepth, nodes, nps, "
          "time_ms, pv. Releases the GIL; on_info(dict) follows each completed iteration.")
      .def(
          "stop", [](PyAlphaBeta& self) { self.s.stop(); },
          "Ends a search running in another thread (it returns its last completed iteration).")
      .def(
          "clear",
          [](PyAlphaBeta& self) {
            BusyGuard guard(self.busy, "AlphaBeta.clear");
            py::gil_scoped_release release;
            self.s.clear();
          },
          "New game: empties the transposition table and the move-ordering history.")
      .def(
          "set_hash",
          [](PyAlphaBeta& self, long long mb) {
            const size_t size = checked_hash_mb(mb, "AlphaBeta.set_hash");
            BusyGuard guard(self.busy, "AlphaBeta.set_hash");
            py::gil_scoped_release release;
            self.s.set_hash(size);
          },
          py::arg("mb"), "Resizes (and clears) the transposition table.")
      .def_property_readonly(
          "uses_nnue", [](const PyAlphaBeta& self) { return self.s.uses_nnue(); },
          "Whether this searcher evaluates with an NNUE network (else the control evaluator).");
}

}  // namespace czb
