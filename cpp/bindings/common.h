// Shared helpers of the pybind11 bindings: error types that become Python
// exceptions, argument and buffer checks, keyword-constructed option structs.
// One registration function per layer (core, search, selfplay, nnue, alphabeta) uses them;
// module.cpp is the single module that calls those functions.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/encoding.h"
#include "core/game.h"

namespace czb {

namespace py = pybind11;
using namespace cz;

// C++ errors registered as chesszero.core.ChessError (a ValueError) and its subclasses.
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

// Quotes user input for error messages: non-printable bytes become \xNN.
std::string quote(const std::string& text);
Game game_from_fen(const std::optional<std::string>& fen);
Move parse_move(const Game& g, const std::string& uci);
Move checked_action(const Game& g, int action);

// What encoding a game needs, copied out of a Python Game while the GIL is
// held: the encoders then run without the GIL on data no other thread can
// change or free (a Game object may be mutated or dropped meanwhile).
struct EncodeInput {
  Position pos;
  Move recent[kHistoryMoves];
  int num_recent = 0;
  int repetitions = 0;
  EncodeContext context() const { return {recent, num_recent, repetitions}; }
};
std::vector<EncodeInput> encode_inputs(const py::sequence& games);
py::array_t<float> planes_array(py::ssize_t n);
std::vector<std::string> uci_moves(Position pos, const std::vector<Move>& moves);

// ValueError "<what>: <error>" unless error is empty.
void require(const std::string& error, const char* what);

// The caller's planes buffer: float32, C-contiguous, writeable, (B, 52, 8, 8), B >= 1.
float* planes_buffer(py::array& out, int& capacity, const char* what);

using FloatRows = py::array_t<float, py::array::c_style | py::array::forcecast>;

// Network outputs for a batch: logits (rows, 1880) and WDL (rows, 3), shapes
// checked against the batch's row count by check(). Holds references to the
// (possibly converted) arrays, so their data stays valid without the GIL.
// With moves-left estimates (rows,) as well when given (None: absent).
struct NetworkRows {
  FloatRows logits, wdl, moves_left;
  size_t logit_rows = 0, wdl_rows = 0, moves_left_rows = 0;
  bool has_moves_left = false;
  // ValueError unless each has n rows (no Python call: safe without the GIL).
  void check(size_t n, const char* what) const;
};
NetworkRows network_rows(const py::handle& logits, const py::handle& wdl, const py::handle& moves_left,
                         const char* what);

// Runs f() with the GIL released and `owner.mu` held, and returns its value.
// f must not touch Python objects (it may throw C++ exceptions, py::value_error
// included). The mutex is never waited for with the GIL held, and is released
// before the GIL is taken back (DESIGN 13), so two Python threads driving one
// object cannot deadlock. Arguments are converted before, results after.
template <class Owner, class F>
auto locked(Owner& owner, F&& f) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(owner.mu);
  return f();
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

template <class T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> out(py::ssize_t(v.size()));
  if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(T));
  return out;
}

// Field names of an options struct, for keyword construction and repr.
template <class T>
std::unordered_set<std::string>& field_names() {
  static std::unordered_set<std::string> names;
  return names;
}

// Registers readwrite fields and remembers their names for keyword construction.
template <class T>
struct FieldBinder {
  py::class_<T>& cls;
  template <class M>
  FieldBinder& field(const char* name, M T::*member, const char* doc) {
    cls.def_readwrite(name, member, doc);
    field_names<T>().insert(name);
    return *this;
  }
};

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

// The batch protocol of a native batch owner (Searcher, Actor) held by a
// Python object `Owner` with a mutex `mu` and the row counts `sizes` of its
// outstanding batches: prepare_batch fills the caller's planes buffer,
// submit_results hands back the network's answers, oldest first. Both run
// the native work with the GIL released and the mutex held (see locked()).
template <class Owner, class Engine>
void def_batch_protocol(py::class_<Owner>& cls, Engine Owner::*engine) {
  cls.def(
      "prepare_batch",
      [engine](Owner& p, py::array out_planes) {  // out_planes stays referenced for the call
        int cap = 0;
        float* dst = planes_buffer(out_planes, cap, "prepare_batch");
        return locked(p, [&] {
          Engine& e = p.*engine;
          if (e.outstanding() >= e.max_outstanding())
            throw py::value_error("prepare_batch: max_outstanding batches already wait for results");
          int n = e.prepare(dst, cap);
          if (n > 0) p.sizes.push_back(size_t(n));
          return n;
        });
      },
      py::arg("out_planes"));
  cls.def(
      "submit_results",
      [engine](Owner& p, const py::handle& logits, const py::handle& wdl, const py::handle& moves_left) {
        const NetworkRows rows = network_rows(logits, wdl, moves_left, "submit_results");
        const float* l = rows.logits.data();
        const float* w = rows.wdl.data();
        const float* ml = rows.has_moves_left ? rows.moves_left.data() : nullptr;
        locked(p, [&] {
          if (p.sizes.empty()) throw py::value_error("submit_results: no batch is outstanding");
          rows.check(p.sizes.front(), "submit_results");
          require((p.*engine).submit(l, w, ml), "submit_results");
          p.sizes.erase(p.sizes.begin());
        });
      },
      py::arg("logits"), py::arg("wdl"), py::arg("moves_left") = py::none(),
      "Answers the oldest outstanding batch: policy logits (rows, 1880), WDL probabilities (rows, 3) and, "
      "optionally, the plies left in each row's game (rows,), which the moves-left utility needs.");
}

// Registration functions, one per layer, called in this order by module.cpp.
void bind_core(py::module_& m);
void bind_search(py::module_& m);
void bind_selfplay(py::module_& m);
void bind_nnue(py::module_& m);  // NnueNet: py::class_<cz::nnue::Network, std::shared_ptr<...>>
void bind_alphabeta(py::module_& m);

}  // namespace czb
