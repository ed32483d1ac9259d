// Material-odds start positions (see odds.h).
#include "selfplay/odds.h"

#include <cctype>
#include <sstream>
#include <utility>
#include <vector>

namespace cz {

int odds_piece_value(char piece) {
  switch (std::tolower(static_cast<unsigned char>(piece))) {
    case 'p': return 1;
    case 'n': return 3;
    case 'b': return 3;
    case 'r': return 5;
    case 'q': return 9;
    default: return 0;
  }
}

int material_pawns(const Position& pos, Color c) {
  return popcount(pos.pieces(c, PAWN)) + 3 * popcount(pos.pieces(c, KNIGHT)) + 3 * popcount(pos.pieces(c, BISHOP)) +
         5 * popcount(pos.pieces(c, ROOK)) + 9 * popcount(pos.pieces(c, QUEEN));
}

namespace {

// Squares a8..h8, a7..h7, ..., a1..h1 (FEN order); '.' is empty.
std::string expand(const std::string& placement) {
  std::string board;
  for (char c : placement) {
    if (c == '/') continue;
    if (std::isdigit(static_cast<unsigned char>(c))) board.append(size_t(c - '0'), '.');
    else board.push_back(c);
  }
  return board;
}

std::string compress(const std::string& board) {
  std::string out;
  for (int rank = 0; rank < 8; ++rank) {
    int empty = 0;
    for (int file = 0; file < 8; ++file) {
      const char c = board[size_t(rank * 8 + file)];
      if (c == '.') { ++empty; continue; }
      if (empty) out.push_back(char('0' + empty));
      empty = 0;
      out.push_back(c);
    }
    if (empty) out.push_back(char('0' + empty));
    if (rank < 7) out.push_back('/');
  }
  return out;
}

// The castling rights of `rights` whose king and rook are still on their squares.
std::string kept_rights(const std::string& rights, const std::string& board) {
  static const std::pair<char, std::pair<int, int>> need[] = {
      {'K', {60, 63}}, {'Q', {60, 56}}, {'k', {4, 7}}, {'q', {4, 0}}};
  std::string out;
  for (const auto& [right, squares] : need) {
    if (rights.find(right) == std::string::npos) continue;
    const bool white = std::isupper(static_cast<unsigned char>(right));
    if (board[size_t(squares.first)] == (white ? 'K' : 'k') && board[size_t(squares.second)] == (white ? 'R' : 'r'))
      out.push_back(right);
  }
  return out.empty() ? "-" : out;
}

}  // namespace

std::string odds_fen(const Position& pos, int min_pawns, int max_pawns, Rng& rng) {
  std::istringstream in(pos.fen());
  std::string placement, side, rights, ep, halfmove, fullmove;
  in >> placement >> side >> rights >> ep >> halfmove >> fullmove;
  std::string board = expand(placement);
  const bool white_gives = rng.below(2) == 0;
  std::vector<int> squares;
  for (int i = 0; i < 64; ++i) {
    const char c = board[size_t(i)];
    if (c != '.' && odds_piece_value(c) > 0 && bool(std::isupper(static_cast<unsigned char>(c))) == white_gives)
      squares.push_back(i);
  }
  for (size_t i = squares.size(); i > 1; --i) std::swap(squares[i - 1], squares[rng.below(uint32_t(i))]);
  const int target = min_pawns + int(rng.below(uint32_t(max_pawns - min_pawns + 1)));
  int taken = 0;
  for (int sq : squares) {
    const int v = odds_piece_value(board[size_t(sq)]);
    if (taken + v > target) continue;
    board[size_t(sq)] = '.';
    taken += v;
  }
  if (taken < min_pawns) return {};
  return compress(board) + " " + side + " " + kept_rights(rights, board) + " - 0 " + fullmove;
}

}  // namespace cz
