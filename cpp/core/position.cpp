// Position: construction, strict FEN parsing/formatting, UCI move text,
// copy-make move application with incremental Zobrist key.
#include "core/position.h"

#include <array>
#include <cstring>
#include <sstream>
#include <vector>

namespace cz {

namespace {

// Castling rights lost when a piece moves from or to a square.
constexpr std::array<int, 64> make_rights_mask() {
  std::array<int, 64> m{};
  for (int& v : m) v = ALL_CASTLING;
  m[make_square(4, 0)] &= ~(WHITE_OO | WHITE_OOO);
  m[make_square(7, 0)] &= ~WHITE_OO;
  m[make_square(0, 0)] &= ~WHITE_OOO;
  m[make_square(4, 7)] &= ~(BLACK_OO | BLACK_OOO);
  m[make_square(7, 7)] &= ~BLACK_OO;
  m[make_square(0, 7)] &= ~BLACK_OOO;
  return m;
}
constexpr std::array<int, 64> kRightsMask = make_rights_mask();

constexpr const char* kPieceChars = "PNBRQK";

std::string square_name(Square s) {
  return std::string{char('a' + file_of(s)), char('1' + rank_of(s))};
}

bool parse_int(const std::string& text, int lo, int hi, int& out) {
  if (text.empty() || text.size() > 6) return false;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

}  // namespace

Position::Position(Empty) {
  for (auto& sq : board_) sq = NO_PIECE;
}

Position::Position() : Position(Empty{}) {
  std::string error;
  from_fen(kStartFen, *this, error);
}

void Position::put(Piece p, Square s) {
  board_[s] = p;
  by_type_[type_of(p)] |= bb(s);
  by_color_[color_of(p)] |= bb(s);
  key_ ^= zobrist::piece_square(p, s);
}

void Position::remove(Square s) {
  Piece p = board_[s];
  by_type_[type_of(p)] ^= bb(s);
  by_color_[color_of(p)] ^= bb(s);
  board_[s] = NO_PIECE;
  key_ ^= zobrist::piece_square(p, s);
}

void Position::move_piece(Square from, Square to) {
  Piece p = board_[from];
  Bitboard ft = bb(from) | bb(to);
  by_type_[type_of(p)] ^= ft;
  by_color_[color_of(p)] ^= ft;
  board_[from] = NO_PIECE;
  board_[to] = p;
  key_ ^= zobrist::piece_square(p, from) ^ zobrist::piece_square(p, to);
}

Bitboard Position::attackers_to(Square s, Bitboard occ) const {
  return (pawn_attacks(BLACK, s) & pieces(WHITE, PAWN)) |
         (pawn_attacks(WHITE, s) & pieces(BLACK, PAWN)) |
         (knight_attacks(s) & pieces(KNIGHT)) | (king_attacks(s) & pieces(KING)) |
         (rook_attacks(s, occ) & (pieces(ROOK) | pieces(QUEEN))) |
         (bishop_attacks(s, occ) & (pieces(BISHOP) | pieces(QUEEN)));
}

// Sets ep_ to `candidate` (the square a pawn just skipped) only when the side
// to move has a legal en-passant capture there.
void Position::set_legal_ep(Square candidate) {
  ep_ = NO_SQUARE;
  Color us = stm_;
  Bitboard capturers = pawn_attacks(~us, candidate) & pieces(us, PAWN);
  if (!capturers) return;
  Square ksq = king_square(us);
  Square victim = candidate + (us == WHITE ? -8 : 8);
  while (capturers) {
    Square from = pop_lsb(capturers);
    Bitboard occ = (pieces() ^ bb(from) ^ bb(victim)) | bb(candidate);
    Bitboard them = pieces(~us) ^ bb(victim);
    bool attacked = (rook_attacks(ksq, occ) & (pieces(ROOK) | pieces(QUEEN)) & them) ||
                    (bishop_attacks(ksq, occ) & (pieces(BISHOP) | pieces(QUEEN)) & them) ||
                    (knight_attacks(ksq) & pieces(KNIGHT) & them) ||
                    (pawn_attacks(us, ksq) & pieces(PAWN) & them);
    if (!attacked) {
      ep_ = candidate;
      key_ ^= zobrist::ep_file(file_of(candidate));
      return;
    }
  }
}

Key Position::compute_key() const {
  Key k = 0;
  for (Square s = 0; s < 64; ++s)
    if (board_[s] != NO_PIECE) k ^= zobrist::piece_square(board_[s], s);
  k ^= zobrist::castling(castling_);
  if (ep_ != NO_SQUARE) k ^= zobrist::ep_file(file_of(ep_));
  if (stm_ == BLACK) k ^= zobrist::side();
  return k;
}

bool Position::from_fen(const std::string& fen, Position& out, std::string& error) {
  init_bitboards();
  std::vector<std::string> fields;
  {
    std::istringstream in(fen);
    std::string f;
    while (in >> f) fields.push_back(f);
  }
  if (fields.size() != 6 && fields.size() != 4) {
    error = "expected 6 space-separated fields (or 4 without move counters), got " +
            std::to_string(fields.size());
    return false;
  }
  Position p{Empty{}};

  // 1. Piece placement, rank 8 first.
  int rank = 7, file = 0;
  const std::string& board = fields[0];
  for (size_t i = 0; i < board.size(); ++i) {
    char c = board[i];
    if (c == '/') {
      if (file != 8) {
        error = "rank " + std::to_string(rank + 1) + " does not have 8 squares";
        return false;
      }
      if (--rank < 0) {
        error = "more than 8 ranks in the piece placement";
        return false;
      }
      file = 0;
    } else if (c >= '1' && c <= '8') {
      if (i > 0 && board[i - 1] >= '1' && board[i - 1] <= '8') {
        error = "two consecutive digits in the piece placement";
        return false;
      }
      file += c - '0';
      if (file > 8) {
        error = "rank " + std::to_string(rank + 1) + " has more than 8 squares";
        return false;
      }
    } else {
      const char* pc = std::strchr(kPieceChars, std::toupper(static_cast<unsigned char>(c)));
      if (c == '\0' || !pc) {
        error = std::string("invalid character '") + c + "' in the piece placement";
        return false;
      }
      if (file >= 8) {
        error = "rank " + std::to_string(rank + 1) + " has more than 8 squares";
        return false;
      }
      Color col = std::isupper(static_cast<unsigned char>(c)) ? WHITE : BLACK;
      p.put(make_piece(col, PieceType(pc - kPieceChars)), make_square(file, rank));
      ++file;
    }
  }
  if (rank != 0 || file != 8) {
    error = "the piece placement must describe exactly 8 ranks of 8 squares";
    return false;
  }
  for (Color c : {WHITE, BLACK}) {
    if (popcount(p.pieces(c, KING)) != 1) {
      error = std::string(c == WHITE ? "White" : "Black") + " must have exactly one king";
      return false;
    }
  }
  for (Color c : {WHITE, BLACK}) {
    if (popcount(p.pieces(c)) > 16 || popcount(p.pieces(c, PAWN)) > 8) {
      error = std::string(c == WHITE ? "White" : "Black") + " has more than 16 pieces or 8 pawns";
      return false;
    }
  }
  if (p.pieces(PAWN) & (rank_bb(0) | rank_bb(7))) {
    error = "pawns on the first or last rank";
    return false;
  }

  // 2. Side to move.
  if (fields[1] == "w") {
    p.stm_ = WHITE;
  } else if (fields[1] == "b") {
    p.stm_ = BLACK;
  } else {
    error = "side to move must be 'w' or 'b', got '" + fields[1] + "'";
    return false;
  }

  // 3. Castling rights (standard chess: king and rook on their home squares).
  p.castling_ = 0;
  if (fields[2] != "-") {
    const std::string order = "KQkq";
    size_t last = 0;
    for (char c : fields[2]) {
      size_t idx = order.find(c);
      if (idx == std::string::npos) {
        error = std::string("invalid castling character '") + c + "'";
        return false;
      }
      if (p.castling_ & (1 << idx) || (p.castling_ && idx < last)) {
        error = "castling rights repeated or out of KQkq order";
        return false;
      }
      last = idx;
      p.castling_ |= 1 << idx;
    }
    struct Need { int right; Square king; Square rook; Color c; };
    const Need needs[4] = {{WHITE_OO, 4, 7, WHITE}, {WHITE_OOO, 4, 0, WHITE},
                           {BLACK_OO, 60, 63, BLACK}, {BLACK_OOO, 60, 56, BLACK}};
    for (const Need& n : needs) {
      if ((p.castling_ & n.right) && (p.board_[n.king] != make_piece(n.c, KING) ||
                                      p.board_[n.rook] != make_piece(n.c, ROOK))) {
        error = "castling right '" + std::string(1, order[__builtin_ctz(n.right)]) +
                "' without king and rook on their original squares";
        return false;
      }
    }
  }
  p.key_ ^= zobrist::castling(p.castling_);
  if (p.stm_ == BLACK) p.key_ ^= zobrist::side();

  // Side not to move must not be in check.
  Color them = ~p.stm_;
  if (p.attackers_to(p.king_square(them), p.pieces()) & p.pieces(p.stm_)) {
    error = "the side not to move is in check";
    return false;
  }
  p.checkers_ = p.attackers_to(p.king_square(p.stm_), p.pieces()) & p.pieces(them);
  if (popcount(p.checkers_) > 2) {
    error = "more than two pieces give check";
    return false;
  }

  // 4. En-passant square: syntactically checked, kept only when legal.
  p.ep_ = NO_SQUARE;
  if (fields[3] != "-") {
    const std::string& e = fields[3];
    if (e.size() != 2 || e[0] < 'a' || e[0] > 'h' || e[1] < '1' || e[1] > '8') {
      error = "invalid en-passant square '" + e + "'";
      return false;
    }
    Square s = make_square(e[0] - 'a', e[1] - '1');
    int want_rank = p.stm_ == WHITE ? 5 : 2;
    Square pawn_sq = s + (p.stm_ == WHITE ? -8 : 8);
    Square origin = s + (p.stm_ == WHITE ? 8 : -8);
    if (rank_of(s) != want_rank || p.board_[pawn_sq] != make_piece(them, PAWN) ||
        p.board_[s] != NO_PIECE || p.board_[origin] != NO_PIECE) {
      error = "en-passant square '" + e + "' does not follow a double pawn push";
      return false;
    }
    p.set_legal_ep(s);
  }

  // 5-6. Move counters.
  p.halfmove_ = 0;
  p.fullmove_ = 1;
  if (fields.size() == 6) {
    if (!parse_int(fields[4], 0, 100000, p.halfmove_)) {
      error = "invalid halfmove clock '" + fields[4] + "'";
      return false;
    }
    if (!parse_int(fields[5], 1, 100000, p.fullmove_)) {
      error = "invalid fullmove number '" + fields[5] + "'";
      return false;
    }
  }
  out = p;
  return true;
}

std::string Position::fen() const {
  std::string s;
  for (int r = 7; r >= 0; --r) {
    int empty = 0;
    for (int f = 0; f < 8; ++f) {
      Piece p = board_[make_square(f, r)];
      if (p == NO_PIECE) {
        ++empty;
        continue;
      }
      if (empty) s += char('0' + empty), empty = 0;
      char c = kPieceChars[type_of(p)];
      s += color_of(p) == WHITE ? c : char(std::tolower(c));
    }
    if (empty) s += char('0' + empty);
    if (r) s += '/';
  }
  s += stm_ == WHITE ? " w " : " b ";
  if (!castling_) s += '-';
  if (castling_ & WHITE_OO) s += 'K';
  if (castling_ & WHITE_OOO) s += 'Q';
  if (castling_ & BLACK_OO) s += 'k';
  if (castling_ & BLACK_OOO) s += 'q';
  s += ' ';
  s += ep_ == NO_SQUARE ? "-" : square_name(ep_);
  s += ' ' + std::to_string(halfmove_) + ' ' + std::to_string(fullmove_);
  return s;
}

Square Position::real_to(Move m) {
  if (m.kind() != CASTLING) return m.to();
  int rank = rank_of(m.from());
  return make_square(m.to() > m.from() ? 6 : 2, rank);
}

std::string Position::uci(Move m) const {
  if (m.is_none()) return "0000";
  std::string s = square_name(m.from()) + square_name(real_to(m));
  if (m.kind() == PROMOTION) s += "nbrq"[m.promotion() - KNIGHT];
  return s;
}

bool Position::parse_uci(const std::string& text, Move& out, std::string& error) const {
  auto bad = [&](const std::string& why) {
    error = why;
    return false;
  };
  if (text.size() != 4 && text.size() != 5) return bad("malformed UCI move");
  for (int i = 0; i < 4; i += 2)
    if (text[i] < 'a' || text[i] > 'h' || text[i + 1] < '1' || text[i + 1] > '8')
      return bad("malformed UCI move");
  Square from = make_square(text[0] - 'a', text[1] - '1');
  Square to = make_square(text[2] - 'a', text[3] - '1');
  int promo = -1;
  if (text.size() == 5) {
    const char* pc = std::strchr("nbrq", text[4]);
    if (text[4] == '\0' || !pc) return bad("malformed promotion piece in UCI move");
    promo = KNIGHT + int(pc - "nbrq");
  }
  MoveList list;
  legal_moves(list);
  for (Move m : list) {
    if (m.from() != from) continue;
    bool to_match = m.kind() == CASTLING ? (real_to(m) == to || m.to() == to) : m.to() == to;
    if (!to_match) continue;
    if (m.kind() == PROMOTION ? m.promotion() == promo : promo == -1) {
      out = m;
      return true;
    }
  }
  return bad("illegal move");
}

void Position::play(Move m) {
  Color us = stm_, them = ~us;
  Square from = m.from(), to = m.to();
  Piece moved = board_[from];
  int old_castling = castling_;
  if (ep_ != NO_SQUARE) key_ ^= zobrist::ep_file(file_of(ep_));
  ep_ = NO_SQUARE;
  ++halfmove_;
  Square skipped = NO_SQUARE;

  switch (m.kind()) {
    case CASTLING: {
      bool king_side = to > from;
      int r = rank_of(from);
      Square kto = make_square(king_side ? 6 : 2, r), rto = make_square(king_side ? 5 : 3, r);
      Piece rook = board_[to];
      remove(from);
      remove(to);
      put(moved, kto);
      put(rook, rto);
      break;
    }
    case EN_PASSANT:
      remove(to + (us == WHITE ? -8 : 8));
      move_piece(from, to);
      halfmove_ = 0;
      break;
    case PROMOTION:
      if (board_[to] != NO_PIECE) remove(to);
      remove(from);
      put(make_piece(us, m.promotion()), to);
      halfmove_ = 0;
      break;
    default:
      if (board_[to] != NO_PIECE) {
        remove(to);
        halfmove_ = 0;
      }
      move_piece(from, to);
      if (type_of(moved) == PAWN) {
        halfmove_ = 0;
        if ((to ^ from) == 16) skipped = (to + from) / 2;
      }
  }
  castling_ &= kRightsMask[from] & kRightsMask[to];
  if (castling_ != old_castling)
    key_ ^= zobrist::castling(old_castling) ^ zobrist::castling(castling_);
  if (us == BLACK) ++fullmove_;
  stm_ = them;
  key_ ^= zobrist::side();
  checkers_ = attackers_to(king_square(them), pieces()) & pieces(us);
  if (skipped != NO_SQUARE) set_legal_ep(skipped);
}

void Position::play_null() {
  if (ep_ != NO_SQUARE) key_ ^= zobrist::ep_file(file_of(ep_));
  ep_ = NO_SQUARE;
  ++halfmove_;
  if (stm_ == BLACK) ++fullmove_;
  stm_ = ~stm_;
  key_ ^= zobrist::side();
  checkers_ = 0;  // the side now to move was the side not to move: never in check
}

bool Position::has_insufficient_material(Color c) const {
  Bitboard own = pieces(c);
  if (own & (pieces(PAWN) | pieces(ROOK) | pieces(QUEEN))) return false;
  if (own & pieces(KNIGHT))
    return popcount(own) <= 2 && !(pieces(~c) & ~pieces(KING) & ~pieces(QUEEN));
  if (own & pieces(BISHOP)) {
    Bitboard bishops = pieces(BISHOP);
    bool same_colour = !(bishops & DARK_SQUARES) || !(bishops & ~DARK_SQUARES);
    return same_colour && !pieces(PAWN) && !pieces(KNIGHT);
  }
  return true;
}

bool Position::insufficient_material() const {
  return has_insufficient_material(WHITE) && has_insufficient_material(BLACK);
}

}  // namespace cz
