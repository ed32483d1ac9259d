// Alpha-beta layer: move ordering. History (a butterfly table of quiet moves
// that caused cutoffs, by side, origin and destination) and two killer moves
// per ply; the MovePicker hands out a node's legal moves best first:
//
//   1. the transposition-table move,
//   2. captures and queen promotions, most valuable victim first, least
//      valuable attacker next; with see_split, a capture that loses material
//      (SEE < 0) is moved behind the quiet moves when its turn comes,
//   3. the two killer moves of the ply,
//   4. the other quiet moves (underpromotions included) by history,
//   5. the losing captures.
//
// Moves are scored once and picked by selection, so a node cut off after a
// few moves never sorts the rest; SEE runs only on captures actually picked.
#pragma once

#include <cstdint>

#include "alphabeta/score.h"
#include "alphabeta/see.h"

namespace cz::ab {

// Neither a capture nor a queen promotion.
inline bool is_quiet(const Position& pos, Move m) {
  return !is_capture(pos, m) && !(m.kind() == PROMOTION && m.promotion() == QUEEN);
}

struct History {
  static constexpr int kMax = 16384;  // |butterfly| stays below this
  int16_t butterfly[2][64][64];       // [side][from][to]
  Move killers[kMaxPly + 2][2];

  void clear();
  void age();  // halve the history and forget the killers (between searches)
  int score(Color c, Move m) const { return butterfly[c][m.from()][m.to()]; }
  // Moves the entry toward +-kMax by `bonus`, less as it nears the bound.
  void update(Color c, Move m, int bonus) {
    int16_t& h = butterfly[c][m.from()][m.to()];
    const int b = bonus > kMax ? kMax : bonus < -kMax ? -kMax : bonus;
    h = int16_t(h + b - h * (b < 0 ? -b : b) / kMax);
  }
  void add_killer(int ply, Move m) {
    if (killers[ply][0] != m) {
      killers[ply][1] = killers[ply][0];
      killers[ply][0] = m;
    }
  }
};

class MovePicker {
 public:
  // `moves`: the node's legal moves (or the captures of a quiescence node);
  // killers may be null.
  MovePicker(const Position& pos, const MoveList& moves, Move tt_move, const Move* killers,
             const History& history, bool see_split);
  Move next();  // MOVE_NONE once every move was handed out
  // The quiet moves not yet handed out are skipped (late-move pruning).
  void skip_quiets() { skip_quiets_ = true; }

 private:
  struct Scored {
    Move move;
    bool quiet;
    int score;
  };
  const Position& pos_;
  Scored moves_[MoveList::kCapacity];
  int size_ = 0, cur_ = 0;
  bool see_split_;
  bool skip_quiets_ = false;
};

}  // namespace cz::ab
