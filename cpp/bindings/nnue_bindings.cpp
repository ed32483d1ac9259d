// NNUE bindings (docs/nnue.md section 7): the input features, the quantised
// network NnueNet (load, from_arrays, evaluate, accumulators, incremental
// traces) and the SIMD path choice. A Network is immutable once built, so
// every method runs its C++ work with the GIL released and no lock; inputs
// are converted and output arrays allocated before, with the GIL held.
// NnueNet is registered with a std::shared_ptr<cz::nnue::Network> holder, so
// other bindings can take the network as that type.
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>

#include "bindings/common.h"
#include "nnue/eval.h"
#include "nnue/simd.h"

namespace czb {
namespace {

namespace nnue = cz::nnue;
using NetPtr = std::shared_ptr<nnue::Network>;

Position position_of(const std::string& fen) { return game_from_fen(fen).position(); }

std::vector<Position> positions_of(const std::vector<std::string>& fens) {
  std::vector<Position> out;
  out.reserve(fens.size());
  for (size_t i = 0; i < fens.size(); ++i) {
    try {
      out.push_back(position_of(fens[i]));
    } catch (const InvalidFenCpp& e) {
      throw InvalidFenCpp("fens[" + std::to_string(i) + "]: " + e.what());
    }
  }
  return out;
}

// Sorted active features of both perspectives, side to move first; returns the counts.
std::pair<int, int> sorted_features(const Position& pos, int* stm, int* nstm) {
  const Color us = pos.side_to_move();
  const int a = nnue::active_features(pos, us, stm), b = nnue::active_features(pos, ~us, nstm);
  std::sort(stm, stm + a);
  std::sort(nstm, nstm + b);
  return {a, b};
}

// `a` as a C-contiguous int16 array, or ValueError unless it is int16 with
// the given shape (-1: any length there); shape_text names it in the message.
py::array_t<int16_t, py::array::c_style> int16_arg(const py::array& a, const char* what,
                                                   std::vector<py::ssize_t> shape, const char* shape_text) {
  bool ok = py::isinstance<py::array_t<int16_t>>(a) && a.ndim() == py::ssize_t(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = a.shape(i) == shape[i] || shape[i] < 0;
  if (!ok)
    throw py::value_error(py::str("NnueNet.from_arrays: {} must be an int16 array of shape {}, got dtype {}, shape {}")
                              .format(what, shape_text, a.dtype(), a.attr("shape"))
                              .cast<std::string>());
  return py::array_t<int16_t, py::array::c_style>::ensure(a);
}

NetPtr from_arrays(const py::array& w1, const py::array& b1, const py::array& w2, int64_t b2) {
  const auto w1c = int16_arg(w1, "w1", {nnue::kInputs, -1}, "(768, N)");
  const py::ssize_t n = w1c.shape(1);
  const auto b1c = int16_arg(b1, "b1", {n}, "(N,)");
  const auto w2c = int16_arg(w2, "w2", {2 * n}, "(2N,)");
  std::string error;
  std::unique_ptr<nnue::Network> net;
  {
    py::gil_scoped_release release;
    net = nnue::make_network(int(n), w1c.data(), b1c.data(), w2c.data(), b2, error);
  }
  require(error, "NnueNet.from_arrays");
  return NetPtr(std::move(net));
}

NetPtr load(const std::filesystem::path& path) {
  std::string error;
  std::unique_ptr<nnue::Network> net;
  {
    py::gil_scoped_release release;
    net = nnue::load(path.string(), error);
  }
  if (!net) throw py::value_error(error);
  return NetPtr(std::move(net));
}

// The legal move `uci` in `pos`, or IllegalMoveError quoting it and the FEN (as parse_move).
Move move_in(const Position& pos, const std::string& uci) {
  Move m;
  std::string error;
  if (!pos.parse_uci(uci, m, error))
    throw IllegalMoveCpp(error + " " + quote(uci) + " in position '" + pos.fen() + "'");
  return m;
}

// The position after a null move (side to move passes; no en-passant square),
// or IllegalMoveError when the side to move is in check.
Position null_child(const Position& pos) {
  if (pos.in_check()) throw IllegalMoveCpp("null move '0000' while in check in position '" + pos.fen() + "'");
  std::string fen = pos.fen();
  const size_t s1 = fen.find(' '), s2 = fen.find(' ', s1 + 1), s3 = fen.find(' ', s2 + 1), s4 = fen.find(' ', s3 + 1);
  fen = fen.substr(0, s1 + 1) + (pos.side_to_move() == WHITE ? "b" : "w") + fen.substr(s2, s3 + 1 - s2) + "-" +
        fen.substr(s4);
  return position_of(fen);
}

}  // namespace

void bind_nnue(py::module_& m) {
  m.def(
      "nnue_features",
      [](const std::string& fen) {
        const Position pos = position_of(fen);
        int stm[nnue::kMaxActive], nstm[nnue::kMaxActive];
        const auto [a, b] = sorted_features(pos, stm, nstm);
        return py::make_tuple(to_numpy(std::vector<int32_t>(stm, stm + a)),
                              to_numpy(std::vector<int32_t>(nstm, nstm + b)));
      },
      py::arg("fen"), "Sorted active feature indices (stm, nstm) as int32 arrays.");
  m.def(
      "nnue_features_batch",
      [](const std::vector<std::string>& fens) {
        const py::ssize_t n = py::ssize_t(fens.size());
        py::array_t<int32_t> stm({n, py::ssize_t(nnue::kMaxActive)}), nstm({n, py::ssize_t(nnue::kMaxActive)});
        int32_t* s = stm.mutable_data();
        int32_t* t = nstm.mutable_data();
        {
          py::gil_scoped_release release;
          const std::vector<Position> positions = positions_of(fens);
          std::fill(s, s + n * nnue::kMaxActive, -1);
          std::fill(t, t + n * nnue::kMaxActive, -1);
          for (py::ssize_t i = 0; i < n; ++i) {
            int a[nnue::kMaxActive], b[nnue::kMaxActive];
            const auto [na, nb] = sorted_features(positions[size_t(i)], a, b);
            std::copy(a, a + na, s + i * nnue::kMaxActive);
            std::copy(b, b + nb, t + i * nnue::kMaxActive);
          }
        }
        return py::make_tuple(stm, nstm);
      },
      py::arg("fens"), "Sorted active features (stm, nstm), int32 [n, 32] padded with -1.");

  m.def("nnue_simd_paths", &nnue::simd_paths, "The SIMD paths this CPU can run, portable first.");
  m.def("nnue_simd", [] { return std::string(nnue::kernels().name); }, "The SIMD path in use.");
  m.def(
      "nnue_set_simd",
      [](const std::string& name) {
        std::string error;
        if (!nnue::set_simd(name, error)) throw py::value_error("nnue_set_simd: " + error);
      },
      py::arg("name"), "Chooses the SIMD path: 'auto' or one of nnue_simd_paths().");

  py::class_<nnue::Network, NetPtr>(m, "NnueNet", "A quantised NNUE network (docs/nnue.md).")
      .def_static("load", &load, py::arg("path"), "Reads a *.nnue file; ValueError naming the file on any defect.")
      .def_static("from_arrays", &from_arrays, py::arg("w1"), py::arg("b1"), py::arg("w2"), py::arg("b2"),
                  "A network from int16 w1 (768, N), b1 (N,), w2 (2N,) and integer b2.")
      .def_property_readonly("hidden", [](const nnue::Network& net) { return net.hidden; })
      .def(
          "evaluate",
          [](const nnue::Network& net, const std::string& fen) {
            const Position pos = position_of(fen);
            py::gil_scoped_release release;
            return nnue::evaluate_full(net, pos);
          },
          py::arg("fen"), "Centipawns from the side to move's view (by refresh).")
      .def(
          "evaluate_batch",
          [](const nnue::Network& net, const std::vector<std::string>& fens) {
            py::array_t<int32_t> out(py::ssize_t(fens.size()));
            int32_t* dst = out.mutable_data();
            {
              py::gil_scoped_release release;
              const std::vector<Position> positions = positions_of(fens);
              for (size_t i = 0; i < positions.size(); ++i) dst[i] = nnue::evaluate_full(net, positions[i]);
            }
            return out;
          },
          py::arg("fens"), "Centipawns from each side to move's view, int32.")
      .def(
          "accumulators",
          [](const nnue::Network& net, const std::string& fen) {
            const Position pos = position_of(fen);
            py::array_t<int16_t> out({py::ssize_t(2), py::ssize_t(net.hidden)});
            int16_t* dst = out.mutable_data();
            py::gil_scoped_release release;
            alignas(64) int16_t acc[nnue::kMaxHidden];
            for (Color c : {WHITE, BLACK}) {
              nnue::refresh(net, pos, c, acc);
              std::copy(acc, acc + net.hidden, dst + size_t(c) * size_t(net.hidden));
            }
            return out;
          },
          py::arg("fen"), "int16 (2, N) by refresh, White's perspective first.")
      .def(
          "trace",
          [](const nnue::Network& net, const std::string& fen, const std::vector<std::string>& moves) {
            Position pos = position_of(fen);
            const size_t plies = moves.size(), n = size_t(net.hidden);
            py::array_t<int16_t> out({py::ssize_t(plies + 1), py::ssize_t(2), py::ssize_t(n)});
            int16_t* dst = out.mutable_data();
            py::gil_scoped_release release;
            nnue::EvalStack stack(net, int(plies));
            stack.reset(pos);
            for (const std::string& uci : moves) {
              const Move mv = move_in(pos, uci);
              stack.push(pos, mv);
              pos.play(mv);
            }
            // Read top down: the first read brings the whole line up to date
            // from the root, one incremental step per ply (the lazy path).
            for (size_t ply = plies + 1; ply-- > 0;) {
              for (Color c : {WHITE, BLACK})
                std::copy_n(stack.accumulator(c), n, dst + (ply * 2 + size_t(c)) * n);
              if (ply) stack.pop();
            }
            return out;
          },
          py::arg("fen"), py::arg("moves"),
          "int16 (plies + 1, 2, N): the accumulators after each UCI move, updated incrementally.")
      .def(
          "evaluate_line",
          [](const nnue::Network& net, const std::string& fen, const std::vector<std::string>& moves) {
            Position pos = position_of(fen);
            py::array_t<int32_t> out(py::ssize_t(moves.size() + 1));
            int32_t* dst = out.mutable_data();
            py::gil_scoped_release release;
            nnue::EvalStack stack(net, int(moves.size()));
            stack.reset(pos);
            dst[0] = stack.evaluate(pos);
            for (size_t i = 0; i < moves.size(); ++i) {
              if (moves[i] == "0000") {
                pos = null_child(pos);
                stack.push_null();
              } else {
                const Move mv = move_in(pos, moves[i]);
                stack.push(pos, mv);
                pos.play(mv);
              }
              dst[i + 1] = stack.evaluate(pos);
            }
            return out;
          },
          py::arg("fen"), py::arg("moves"),
          "int32 (plies + 1,): centipawns after each move through the search's incremental "
          "EvalStack; '0000' is a null move.");
}

}  // namespace czb
