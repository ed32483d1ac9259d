// Legal move generation (pins, checks, evasions, castling, en passant), the
// captures-only variant of the alpha-beta quiescence search, and perft with
// bulk counting at the last ply.
#include <cassert>

#include "core/position.h"

namespace cz {

namespace {

template <bool CountOnly, bool QueenOnly = false>
struct Sink {
  MoveList* list;
  int count = 0;
  void add(Move m) {
    if constexpr (!CountOnly) list->push(m);
    ++count;
  }
  void add_all(Square from, Bitboard targets) {
    if constexpr (CountOnly) {
      count += popcount(targets);
    } else {
      while (targets) add(Move::make(from, pop_lsb(targets)));
    }
  }
  void add_promotions(Square from, Square to) {
    if constexpr (CountOnly) {
      count += 4;
    } else {
      if constexpr (QueenOnly) {
        add(Move::make(from, to, PROMOTION, QUEEN));
      } else {
        for (PieceType t : {QUEEN, ROOK, BISHOP, KNIGHT}) add(Move::make(from, to, PROMOTION, t));
      }
    }
  }
};

}  // namespace

// CapturesOnly: destinations restricted to enemy pieces, plus pawn pushes to
// the last rank and en passant; promotions to a queen only; no castling.
template <bool CountOnly, bool CapturesOnly>
int Position::generate(MoveList* out) const {
  Sink<CountOnly, CapturesOnly> sink{out};
  const Color us = stm_, them = ~us;
  const Bitboard own = pieces(us), enemy = pieces(them), occ = own | enemy;
  const Square ksq = king_square(us);
  const Bitboard dest = CapturesOnly ? enemy : ~own;  // where pieces may go

  // King moves: destination must not be attacked with our king lifted off.
  {
    Bitboard occ_no_king = occ ^ bb(ksq);
    Bitboard targets = king_attacks(ksq) & dest;
    Bitboard safe = 0;
    Bitboard t = targets;
    while (t) {
      Square s = pop_lsb(t);
      if (!(attackers_to(s, occ_no_king) & enemy)) safe |= bb(s);
    }
    sink.add_all(ksq, safe);
  }
  if (more_than_one(checkers_)) return sink.count;

  // Check mask: squares that resolve a single check (or everything).
  Bitboard check_mask = ~Bitboard(0);
  if (checkers_) {
    Square c = lsb(checkers_);
    check_mask = between_bb(ksq, c) | checkers_;
  }

  // Pinned pieces: own pieces alone between the king and an enemy slider.
  Bitboard pinned = 0;
  {
    Bitboard snipers = ((rook_attacks(ksq, 0) & (pieces(ROOK) | pieces(QUEEN))) |
                        (bishop_attacks(ksq, 0) & (pieces(BISHOP) | pieces(QUEEN)))) &
                       enemy;
    while (snipers) {
      Square s = pop_lsb(snipers);
      Bitboard b = between_bb(ksq, s) & occ;
      if (b && !more_than_one(b) && (b & own)) pinned |= b;
    }
  }
  auto pin_mask = [&](Square from) -> Bitboard {
    return (pinned & bb(from)) ? line_bb(ksq, from) : ~Bitboard(0);
  };

  // Knights (a pinned knight can never move), bishops, rooks, queens.
  for (Bitboard b = pieces(us, KNIGHT) & ~pinned; b;) {
    Square s = pop_lsb(b);
    sink.add_all(s, knight_attacks(s) & dest & check_mask);
  }
  for (Bitboard b = own & (pieces(BISHOP) | pieces(QUEEN)); b;) {
    Square s = pop_lsb(b);
    sink.add_all(s, bishop_attacks(s, occ) & dest & check_mask & pin_mask(s));
  }
  for (Bitboard b = own & (pieces(ROOK) | pieces(QUEEN)); b;) {
    Square s = pop_lsb(b);
    sink.add_all(s, rook_attacks(s, occ) & dest & check_mask & pin_mask(s));
  }

  // Pawns.
  const int up = us == WHITE ? 8 : -8;
  const Bitboard promo_rank = rank_bb(us == WHITE ? 7 : 0);
  const Bitboard start_rank = rank_bb(us == WHITE ? 1 : 6);
  for (Bitboard b = pieces(us, PAWN); b;) {
    Square s = pop_lsb(b);
    Bitboard allowed = check_mask & pin_mask(s);
    Bitboard targets = pawn_attacks(us, s) & enemy;
    Square one = s + up;  // on the board: no pawn stands on the last rank
    if (!(occ & bb(one)) && (!CapturesOnly || (bb(one) & promo_rank))) {
      targets |= bb(one);
      // Only from the start rank, so `two` is never off the board.
      if (!CapturesOnly && (bb(s) & start_rank) && !(occ & bb(one + up))) targets |= bb(one + up);
    }
    targets &= allowed;
    if (targets & promo_rank) {
      while (targets) sink.add_promotions(s, pop_lsb(targets));
    } else {
      sink.add_all(s, targets);
    }
  }
  // En passant: ep_ is stored only when some capture is legal, but each
  // capturer is still checked (pins along the rank, discovered checks).
  if (ep_ != NO_SQUARE) {
    Square victim = ep_ - up;
    for (Bitboard b = pawn_attacks(them, ep_) & pieces(us, PAWN); b;) {
      Square from = pop_lsb(b);
      Bitboard occ2 = (occ ^ bb(from) ^ bb(victim)) | bb(ep_);
      Bitboard enemy2 = enemy ^ bb(victim);
      if ((rook_attacks(ksq, occ2) & (pieces(ROOK) | pieces(QUEEN)) & enemy2) ||
          (bishop_attacks(ksq, occ2) & (pieces(BISHOP) | pieces(QUEEN)) & enemy2) ||
          (knight_attacks(ksq) & pieces(KNIGHT) & enemy2) ||
          (pawn_attacks(us, ksq) & pieces(PAWN) & enemy2))
        continue;
      sink.add(Move::make(from, ep_, EN_PASSANT));
    }
  }

  // Castling: not in check, path empty, king's path not attacked.
  if (!CapturesOnly && !checkers_ && (castling_ & (us == WHITE ? (WHITE_OO | WHITE_OOO) : (BLACK_OO | BLACK_OOO)))) {
    const int r = us == WHITE ? 0 : 7;
    struct Side { int right; int rook_file; int king_to; int rook_to; };
    const Side sides[2] = {{us == WHITE ? WHITE_OO : BLACK_OO, 7, 6, 5},
                           {us == WHITE ? WHITE_OOO : BLACK_OOO, 0, 2, 3}};
    for (const Side& sd : sides) {
      if (!(castling_ & sd.right)) continue;
      Square rook = make_square(sd.rook_file, r);
      Square kto = make_square(sd.king_to, r), rto = make_square(sd.rook_to, r);
      Bitboard must_be_empty =
          (between_bb(ksq, rook) | between_bb(ksq, kto) | bb(kto) | bb(rto)) & ~bb(ksq) & ~bb(rook);
      if (occ & must_be_empty) continue;
      Bitboard path = between_bb(ksq, kto) | bb(kto);
      bool attacked = false;
      for (Bitboard p = path; p && !attacked;)
        attacked = attackers_to(pop_lsb(p), occ) & enemy;
      if (!attacked) sink.add(Move::make(ksq, rook, CASTLING));
    }
  }
  return sink.count;
}

template int Position::generate<true, false>(MoveList*) const;
template int Position::generate<false, false>(MoveList*) const;
template int Position::generate<false, true>(MoveList*) const;

void Position::legal_moves(MoveList& out) const {
  out.size = 0;
  generate<false, false>(&out);
}

void Position::legal_captures(MoveList& out) const {
  out.size = 0;
  generate<false, true>(&out);
#ifndef NDEBUG
  // Debug builds: exactly the legal captures and queen promotions.
  MoveList all;
  legal_moves(all);
  int expected = 0;
  for (Move m : all) {
    bool capture = m.kind() == EN_PASSANT || (m.kind() != CASTLING && board_[m.to()] != NO_PIECE);
    if (m.kind() == PROMOTION ? m.promotion() == QUEEN : capture) {
      assert(out.contains(m));
      ++expected;
    }
  }
  assert(expected == out.size);
#endif
}

int Position::count_legal_moves() const { return generate<true, false>(nullptr); }

bool Position::is_legal(Move m) const {
  MoveList list;
  legal_moves(list);
  return list.contains(m);
}

uint64_t Position::perft(int depth) const {
  if (depth <= 0) return 1;
  if (depth == 1) return uint64_t(count_legal_moves());
  MoveList list;
  legal_moves(list);
  uint64_t nodes = 0;
  for (Move m : list) {
    Position next = *this;
    next.play(m);
    nodes += next.perft(depth - 1);
  }
  return nodes;
}

}  // namespace cz
