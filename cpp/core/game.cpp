// Game: position stack, repetition counting and terminal status.
#include "core/game.h"

namespace cz {

GameStatus evaluate_status(const Position& pos, int repetitions) {
  return evaluate_status(pos, repetitions, pos.count_legal_moves());
}

GameStatus evaluate_status(const Position& pos, int repetitions, int num_legal) {
  GameStatus st;
  const bool has_moves = num_legal > 0;
  Color stm = pos.side_to_move();
  if (!has_moves && pos.in_check()) {
    st.termination = Termination::CHECKMATE;
    st.result = stm == WHITE ? GameResult::BLACK_WINS : GameResult::WHITE_WINS;
    return st;
  }
  if (pos.insufficient_material()) {
    st.termination = Termination::INSUFFICIENT_MATERIAL;
  } else if (!has_moves) {
    st.termination = Termination::STALEMATE;
  } else if (pos.halfmove_clock() >= 100) {
    st.termination = Termination::FIFTY_MOVES;
  } else if (repetitions >= 2) {
    st.termination = Termination::THREEFOLD_REPETITION;
  } else {
    return st;
  }
  st.result = GameResult::DRAW;
  return st;
}

Game::Game() { stack_.emplace_back(); }

bool Game::from_fen(const std::string& fen, Game& out, std::string& error) {
  Position p;
  if (!Position::from_fen(fen, p, error)) return false;
  out.stack_.assign(1, p);
  out.moves_.clear();
  return true;
}

void Game::play(Move m) {
  stack_.push_back(stack_.back());
  stack_.back().play(m);
  moves_.push_back(m);
}

bool Game::pop() {
  if (moves_.empty()) return false;
  stack_.pop_back();
  moves_.pop_back();
  return true;
}

int Game::repetitions() const {
  const Position& cur = stack_.back();
  int n = int(stack_.size()) - 1;
  int window = std::min(cur.halfmove_clock(), n);
  int count = 0;
  for (int back = 4; back <= window; back += 2)
    if (stack_[n - back].key() == cur.key()) ++count;
  return count;
}

void ending_moves(const Position& pos, std::vector<Move>& mates, std::vector<Move>& stalemates) {
  MoveList list;
  pos.legal_moves(list);
  for (Move mv : list) {
    Position child = pos;
    child.play(mv);
    const GameStatus st = evaluate_status(child, 0);
    if (st.termination == Termination::CHECKMATE) mates.push_back(mv);
    else if (st.termination == Termination::STALEMATE) stalemates.push_back(mv);
  }
}

GameStatus Game::status() const { return evaluate_status(position(), repetitions()); }

int Game::recent_moves(Move* out, int n) const {
  int k = 0;
  for (int i = int(moves_.size()) - 1; i >= 0 && k < n; --i) out[k++] = moves_[i];
  return k;
}

std::vector<Key> Game::keys() const {
  std::vector<Key> keys;
  keys.reserve(stack_.size());
  for (const Position& p : stack_) keys.push_back(p.key());
  return keys;
}

}  // namespace cz
