// Layer 2: a chess position (bitboards + mailbox), strict FEN parsing and
// formatting, UCI move text, copy-make move application, incremental Zobrist
// key, and legal move generation (movegen.cpp).
//
// The en-passant square is stored only when an en-passant capture is legal,
// so the key, FEN and repetition identity match FIDE / python-chess.
#pragma once

#include <string>

#include "core/bitboard.h"
#include "core/types.h"
#include "core/zobrist.h"

namespace cz {

class Position {
 public:
  Position();  // the standard start position

  // Strict FEN parser. Returns false and fills `error` (never throws).
  static bool from_fen(const std::string& fen, Position& out, std::string& error);
  std::string fen() const;

  // Parse a UCI move ("e2e4", "e7e8q", castling as "e1g1" or king-takes-rook
  // "e1h1"); returns false with a message when malformed or illegal here.
  bool parse_uci(const std::string& text, Move& out, std::string& error) const;
  std::string uci(Move m) const;  // standard-chess UCI text (castling e1g1)

  void legal_moves(MoveList& out) const;
  // The legal captures (en passant included) and promotions, promoting to a
  // queen only: the moves of a quiescence search (alpha-beta, not in check).
  void legal_captures(MoveList& out) const;
  int count_legal_moves() const;
  bool is_legal(Move m) const;
  uint64_t perft(int depth) const;

  // Applies a legal move in place (copy the position first to keep it).
  void play(Move m);
  // Passes the turn (a search's null move; never while in check): the side
  // to move flips, the en-passant square goes, the halfmove clock counts on.
  void play_null();

  Color side_to_move() const { return stm_; }
  Bitboard pieces() const { return by_color_[0] | by_color_[1]; }
  Bitboard pieces(Color c) const { return by_color_[c]; }
  Bitboard pieces(PieceType t) const { return by_type_[t]; }
  Bitboard pieces(Color c, PieceType t) const { return by_color_[c] & by_type_[t]; }
  Piece piece_on(Square s) const { return board_[s]; }
  Square king_square(Color c) const { return lsb(pieces(c, KING)); }
  int castling_rights() const { return castling_; }
  Square ep_square() const { return ep_; }
  int halfmove_clock() const { return halfmove_; }
  int fullmove_number() const { return fullmove_; }
  Key key() const { return key_; }
  Bitboard checkers() const { return checkers_; }
  bool in_check() const { return checkers_ != 0; }

  // Squares of `by` pieces attacking `s` given occupancy `occ`.
  Bitboard attackers_to(Square s, Bitboard occ) const;
  // python-chess is_insufficient_material(): neither side can mate.
  bool insufficient_material() const;
  bool has_insufficient_material(Color c) const;
  // Real destination of a move's moving piece (king square for castling).
  static Square real_to(Move m);

 private:
  struct Empty {};
  explicit Position(Empty);
  void put(Piece p, Square s);
  void remove(Square s);
  void move_piece(Square from, Square to);
  void set_legal_ep(Square candidate);
  Key compute_key() const;
  template <bool CountOnly, bool CapturesOnly>
  int generate(MoveList* out) const;

  Bitboard by_type_[6] = {};
  Bitboard by_color_[2] = {};
  Piece board_[64];
  Color stm_ = WHITE;
  int castling_ = 0;
  Square ep_ = NO_SQUARE;
  int halfmove_ = 0;
  int fullmove_ = 1;
  Key key_ = 0;
  Bitboard checkers_ = 0;
};

constexpr const char* kStartFen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

}  // namespace cz
