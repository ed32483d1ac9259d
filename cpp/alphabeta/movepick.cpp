// Move ordering (movepick.h): history upkeep and the staged move picker.
#include "alphabeta/movepick.h"

#include <cstring>
#include <utility>

namespace cz::ab {

namespace {

// Score bands, highest first; each band's own ordering lives below its base.
constexpr int kTTBand = 1 << 30;
constexpr int kGoodTacticalBand = 1 << 28;
constexpr int kKillerBand = 1 << 26;
constexpr int kBadTacticalBand = -(1 << 28);  // below every history score

// Most valuable victim first, then least valuable attacker (under 1 << 20).
int mvv_lva(const Position& pos, Move m) {
  int gain = captured_value(pos, m);
  if (m.kind() == PROMOTION) gain += kSeeValue[m.promotion()];
  return gain * 16 - int(type_of(pos.piece_on(m.from())));
}

}  // namespace

void History::clear() {
  std::memset(butterfly, 0, sizeof(butterfly));
  for (auto& k : killers) k[0] = k[1] = MOVE_NONE;
}

void History::age() {
  for (auto& side : butterfly)
    for (auto& from : side)
      for (int16_t& h : from) h = int16_t(h / 2);
  for (auto& k : killers) k[0] = k[1] = MOVE_NONE;
}

MovePicker::MovePicker(const Position& pos, const MoveList& moves, Move tt_move, const Move* killers,
                       const History& history, bool see_split)
    : pos_(pos), see_split_(see_split) {
  const Color us = pos.side_to_move();
  for (Move m : moves) {
    Scored& s = moves_[size_++];
    s.move = m;
    s.quiet = is_quiet(pos, m);
    if (m == tt_move) {
      s.score = kTTBand;
    } else if (!s.quiet) {
      s.score = kGoodTacticalBand + mvv_lva(pos, m);
    } else if (killers && m == killers[0]) {
      s.score = kKillerBand + 1;
    } else if (killers && m == killers[1]) {
      s.score = kKillerBand;
    } else {
      s.score = history.score(us, m);  // within +-History::kMax
    }
  }
}

Move MovePicker::next() {
  while (cur_ < size_) {
    int best = cur_;
    for (int i = cur_ + 1; i < size_; ++i)
      if (moves_[i].score > moves_[best].score) best = i;
    std::swap(moves_[cur_], moves_[best]);
    Scored& s = moves_[cur_];
    if (see_split_ && !s.quiet && s.score >= kGoodTacticalBand && s.score < kTTBand &&
        !see_ge(pos_, s.move, 0)) {
      s.score += kBadTacticalBand - kGoodTacticalBand;  // its turn comes after the quiets
      continue;
    }
    ++cur_;
    if (skip_quiets_ && s.quiet && s.score < kTTBand) continue;
    return s.move;
  }
  return MOVE_NONE;
}

}  // namespace cz::ab
