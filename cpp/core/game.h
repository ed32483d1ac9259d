// Layer 3: a game = start position + moves, with the position stack for
// pop(), repetition counting (full identity via the Zobrist key) and the
// terminal status (checkmate, stalemate, insufficient material, automatic
// threefold repetition, automatic fifty-move rule at halfmove clock 100).
#pragma once

#include <string>
#include <vector>

#include "core/position.h"

namespace cz {

// How a game ended: the one list of game-ending codes (Python reads them
// through the bindings). The rules end a game with CHECKMATE ..
// FIFTY_MOVES (evaluate_status); PLY_CAP and RESIGNATION are adjudications
// by an owner that stops games (the self-play actor), never a rule's. NONE:
// not over (an unfinished self-play game handed back for resumption).
enum class Termination : int {
  NONE = 0,
  CHECKMATE = 1,
  STALEMATE = 2,
  INSUFFICIENT_MATERIAL = 3,
  THREEFOLD_REPETITION = 4,
  FIFTY_MOVES = 5,
  PLY_CAP = 6,
  RESIGNATION = 7,
};

// Result of a finished game from White's point of view.
enum class GameResult : int { ONGOING = 0, WHITE_WINS = 1, BLACK_WINS = 2, DRAW = 3 };

struct GameStatus {
  Termination termination = Termination::NONE;
  GameResult result = GameResult::ONGOING;
  bool is_over() const { return termination != Termination::NONE; }
};

// Terminal status of `pos` given how often it occurred before (`repetitions`).
// Precedence follows python-chess: checkmate, insufficient material,
// stalemate, fifty moves, threefold repetition.
GameStatus evaluate_status(const Position& pos, int repetitions);
// The same when the caller already knows how many legal moves `pos` has
// (a search leaf that generated them to expand): no move generation here.
GameStatus evaluate_status(const Position& pos, int repetitions, int num_legal);

// The legal moves of `pos` after which the game ends in checkmate or in
// stalemate (by evaluate_status: a move that leaves insufficient material is
// neither). Appends to `mates` and `stalemates`.
void ending_moves(const Position& pos, std::vector<Move>& mates, std::vector<Move>& stalemates);

class Game {
 public:
  Game();
  static bool from_fen(const std::string& fen, Game& out, std::string& error);

  const Position& position() const { return stack_.back(); }
  const Position& start_position() const { return stack_.front(); }
  const std::vector<Move>& moves() const { return moves_; }
  int ply() const { return int(moves_.size()); }

  void play(Move m);  // m must be legal in position()
  bool pop();         // false when no move is left to take back

  // How many times the current position occurred earlier in this game.
  int repetitions() const;
  GameStatus status() const;
  // Fills up to n most recent moves, newest first; returns how many.
  int recent_moves(Move* out, int n) const;
  // Keys of all positions of the game, oldest first (for search histories).
  std::vector<Key> keys() const;

 private:
  std::vector<Position> stack_;  // stack_[i] = position after i moves
  std::vector<Move> moves_;
};

}  // namespace cz
