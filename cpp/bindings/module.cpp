// The one pybind11 module, chesszero._core: thin wrappers over the native
// layers. Each layer registers its own bindings (core_bindings.cpp,
// search_bindings.cpp, selfplay_bindings.cpp, nnue_bindings.cpp, alphabeta_bindings.cpp); shared
// helpers are common.h.
#include "bindings/common.h"

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  using namespace czb;
  m.doc() = "chesszero native core: board, rules, encoding, search, self-play and NNUE (see chesszero.core)";
  cz::init_bitboards();

  static py::exception<ChessErrorCpp> chess_error(m, "ChessError", PyExc_ValueError);
  py::register_exception<InvalidFenCpp>(m, "InvalidFenError", chess_error.ptr());
  py::register_exception<IllegalMoveCpp>(m, "IllegalMoveError", chess_error.ptr());
  py::register_exception<InvalidActionCpp>(m, "InvalidActionError", chess_error.ptr());

  bind_core(m);
  bind_search(m);    // SearchOptions must exist before ActorOptions.search
  bind_selfplay(m);
  bind_nnue(m);
  bind_alphabeta(m);
}
