// Core bindings: the Game, batch encoding, reflection and the action table.
// Errors from parsing become ValueError subclasses quoting the bad input and
// the FEN; batch functions release the GIL and write into numpy buffers.
#include "bindings/common.h"

namespace czb {

void bind_core(py::module_& m) {
  m.attr("NUM_PLANES") = kNumPlanes;
  m.attr("NUM_BINARY_PLANES") = kNumBinaryPlanes;
  m.attr("NUM_ACTIONS") = kNumActions;
  m.attr("PACKED_BYTES") = kPackedBytes;
  m.attr("ENCODING_VERSION") = kEncodingVersion;
  m.attr("HISTORY_MOVES") = kHistoryMoves;

  // The game-ending and result codes (core/game.h), the one definition Python reads.
  py::enum_<Termination>(m, "Termination", "How a game ended (NONE: not over).")
      .value("NONE", Termination::NONE)
      .value("CHECKMATE", Termination::CHECKMATE)
      .value("STALEMATE", Termination::STALEMATE)
      .value("INSUFFICIENT_MATERIAL", Termination::INSUFFICIENT_MATERIAL)
      .value("THREEFOLD_REPETITION", Termination::THREEFOLD_REPETITION)
      .value("FIFTY_MOVES", Termination::FIFTY_MOVES)
      .value("PLY_CAP", Termination::PLY_CAP)
      .value("RESIGNATION", Termination::RESIGNATION);
  py::enum_<GameResult>(m, "GameResult", "Result of a game from White's point of view.")
      .value("ONGOING", GameResult::ONGOING)
      .value("WHITE_WINS", GameResult::WHITE_WINS)
      .value("BLACK_WINS", GameResult::BLACK_WINS)
      .value("DRAW", GameResult::DRAW);

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
      .def("_ending_actions",
           [](const Game& g) {
             std::vector<Move> mates, stalemates;
             ending_moves(g.position(), mates, stalemates);
             auto actions = [&g](const std::vector<Move>& moves) {
               std::vector<int> out;
               for (Move mv : moves) out.push_back(action_of(g.position(), mv));
               return out;
             };
             return py::make_tuple(actions(mates), actions(stalemates));
           })
      .def("_status",
           [](const Game& g) {
             GameStatus st = g.status();
             return py::make_tuple(int(st.termination), int(st.result));
           })
      .def("perft",
           [](const Game& g, int depth) {
             if (depth < 0 || depth > 12) throw py::value_error("perft depth must be in 0..12, got " + std::to_string(depth));
             const Position pos = g.position();  // a copy: another thread may change `g` meanwhile
             py::gil_scoped_release release;
             return pos.perft(depth);
           },
           py::arg("depth"));

  m.def(
      "encode_batch",
      [](const py::sequence& games, std::optional<py::array> out) {
        const std::vector<EncodeInput> inputs = encode_inputs(games);
        py::ssize_t n = py::ssize_t(inputs.size());
        py::array arr = out ? *out : py::array(planes_array(n));
        float* dst = checked_out<float>(arr, {n, kNumPlanes, 8, 8}, "encode_batch");
        {
          py::gil_scoped_release release;
          for (py::ssize_t i = 0; i < n; ++i)
            encode_planes(inputs[i].pos, inputs[i].context(), dst + i * kPlaneFloats);
        }
        return arr;
      },
      py::arg("games"), py::arg("out") = py::none());
  m.def(
      "encode_packed_batch",
      [](const py::sequence& games, std::optional<py::array> out) {
        const std::vector<EncodeInput> inputs = encode_inputs(games);
        py::ssize_t n = py::ssize_t(inputs.size());
        py::array arr = out ? *out : py::array(py::array_t<uint8_t>({n, py::ssize_t(kPackedBytes)}));
        uint8_t* dst = checked_out<uint8_t>(arr, {n, kPackedBytes}, "encode_packed_batch");
        {
          py::gil_scoped_release release;
          for (py::ssize_t i = 0; i < n; ++i)
            encode_packed(inputs[i].pos, inputs[i].context(), dst + i * kPackedBytes);
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
}

}  // namespace czb
