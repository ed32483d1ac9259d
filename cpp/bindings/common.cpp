// Implementations of the bindings' shared helpers (see common.h).
#include "bindings/common.h"

namespace czb {

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

std::vector<EncodeInput> encode_inputs(const py::sequence& games) {
  std::vector<EncodeInput> out(games.size());
  size_t i = 0;
  for (py::handle h : games) {
    if (!py::isinstance<Game>(h))
      throw py::type_error("expected chesszero.core.Game items, got " +
                           py::str(py::type::handle_of(h)).cast<std::string>());
    const Game& g = h.cast<const Game&>();
    EncodeInput& e = out[i++];
    e.pos = g.position();
    e.num_recent = g.recent_moves(e.recent, kHistoryMoves);
    e.repetitions = g.repetitions();
  }
  return out;
}

py::array_t<float> planes_array(py::ssize_t n) { return py::array_t<float>({n, py::ssize_t(kNumPlanes), py::ssize_t(8), py::ssize_t(8)}); }

std::vector<std::string> uci_moves(Position pos, const std::vector<Move>& moves) {
  std::vector<std::string> out;
  for (Move m : moves) {
    out.push_back(pos.uci(m));
    pos.play(m);
  }
  return out;
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


// Network outputs for a batch: logits (rows, 1880) and WDL probabilities (rows, 3)
// (shapes only: the tree owner's submit checks the values before it applies any).
NetworkRows network_rows(const py::handle& logits, const py::handle& wdl, const py::handle& moves_left,
                         const char* what) {
  NetworkRows r{FloatRows::ensure(logits), FloatRows::ensure(wdl), FloatRows{}};
  if (!r.logits || !r.wdl) throw py::value_error(std::string(what) + ": logits and wdl must be float arrays");
  if (!moves_left.is_none()) {
    r.moves_left = FloatRows::ensure(moves_left);
    if (!r.moves_left || r.moves_left.ndim() != 1)
      throw py::value_error(std::string(what) + ": moves_left must be a float array of shape (rows,)");
    r.has_moves_left = true;
    r.moves_left_rows = size_t(r.moves_left.shape(0));
  }
  if (r.logits.ndim() != 2 || r.logits.shape(1) != kNumActions)
    throw py::value_error(std::string(what) + ": logits must have shape (rows, 1880)");
  if (r.wdl.ndim() != 2 || r.wdl.shape(1) != 3)
    throw py::value_error(std::string(what) + ": wdl must have shape (rows, 3)");
  r.logit_rows = size_t(r.logits.shape(0));
  r.wdl_rows = size_t(r.wdl.shape(0));
  return r;
}

void NetworkRows::check(size_t n, const char* what) const {
  if (logit_rows != n)
    throw py::value_error(std::string(what) + ": logits must have shape (" + std::to_string(n) + ", 1880)");
  if (wdl_rows != n)
    throw py::value_error(std::string(what) + ": wdl must have shape (" + std::to_string(n) + ", 3)");
  if (has_moves_left && moves_left_rows != n)
    throw py::value_error(std::string(what) + ": moves_left must have shape (" + std::to_string(n) + ",)");
}

}  // namespace czb
