// Layer 0: basic chess types (squares, pieces, colours, moves).
// Everything above includes this; it includes nothing of ours.
#pragma once

#include <cstdint>

namespace cz {

using Bitboard = uint64_t;
using Key = uint64_t;

enum Color : int { WHITE = 0, BLACK = 1 };
constexpr Color operator~(Color c) { return Color(c ^ 1); }

// Piece types in the order the encoding uses them (SPEC 2: P, N, B, R, Q, K).
enum PieceType : int { PAWN = 0, KNIGHT, BISHOP, ROOK, QUEEN, KING, NO_PIECE_TYPE = 6 };

// Piece = color * 8 + type; NO_PIECE marks an empty square. One byte, so a
// Position (copied once per search traversal) stays within three cache lines.
enum Piece : uint8_t { NO_PIECE = 15 };
constexpr Piece make_piece(Color c, PieceType t) { return Piece(int(c) * 8 + int(t)); }
constexpr Color color_of(Piece p) { return Color(int(p) >> 3); }
constexpr PieceType type_of(Piece p) { return PieceType(int(p) & 7); }

// Squares: a1 = 0, b1 = 1, ..., h8 = 63 (absolute coordinates).
using Square = int;
constexpr Square NO_SQUARE = 64;
constexpr int file_of(Square s) { return s & 7; }
constexpr int rank_of(Square s) { return s >> 3; }
constexpr Square make_square(int file, int rank) { return rank * 8 + file; }
constexpr Bitboard bb(Square s) { return Bitboard(1) << s; }

// Castling rights bits.
enum CastlingRight : int {
  WHITE_OO = 1,
  WHITE_OOO = 2,
  BLACK_OO = 4,
  BLACK_OOO = 8,
  ALL_CASTLING = 15,
};

// Move packed in 16 bits: from (6) | to (6) << 6 | promotion piece - KNIGHT (2) << 12 |
// kind (2) << 14. Castling is encoded king origin -> own rook origin (SPEC 3).
enum MoveKind : int { NORMAL = 0, PROMOTION = 1, EN_PASSANT = 2, CASTLING = 3 };

// Move() leaves `data` unset, so a MoveList costs nothing to create; Move{}
// and MOVE_NONE are the null move.
struct Move {
  uint16_t data;

  constexpr Move() = default;
  constexpr explicit Move(uint16_t d) : data(d) {}
  static constexpr Move make(Square from, Square to, MoveKind kind = NORMAL,
                             PieceType promo = KNIGHT) {
    return Move(uint16_t(from | (to << 6) | ((int(promo) - KNIGHT) << 12) | (int(kind) << 14)));
  }
  constexpr Square from() const { return data & 63; }
  constexpr Square to() const { return (data >> 6) & 63; }
  constexpr MoveKind kind() const { return MoveKind(data >> 14); }
  constexpr PieceType promotion() const { return PieceType(((data >> 12) & 3) + KNIGHT); }
  constexpr bool is_none() const { return data == 0; }
  constexpr bool operator==(const Move&) const = default;
};

constexpr Move MOVE_NONE{};

// A fixed-capacity move list (218 is the known maximum of legal moves).
struct MoveList {
  static constexpr int kCapacity = 256;
  Move moves[kCapacity];
  int size = 0;
  void push(Move m) { moves[size++] = m; }
  const Move* begin() const { return moves; }
  const Move* end() const { return moves + size; }
  bool contains(Move m) const {
    for (int i = 0; i < size; ++i)
      if (moves[i] == m) return true;
    return false;
  }
};

}  // namespace cz
