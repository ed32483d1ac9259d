// Layer 4: the network contract (SPEC 1-3). Input planes (float and packed),
// the 1,880 canonical actions, and file reflection. This file is the only
// owner of these layouts; Python reads them through the bindings.
#pragma once

#include <cstdint>

#include "core/game.h"

namespace cz {

constexpr int kEncodingVersion = 1;
constexpr int kNumPlanes = 52;
constexpr int kNumBinaryPlanes = 40;
constexpr int kNumScalarPlanes = 12;
constexpr int kNumActions = 1880;
constexpr int kPackedBytes = kNumBinaryPlanes * 8 + kNumScalarPlanes;  // 332
constexpr int kHistoryMoves = 8;
constexpr int kPlaneFloats = kNumPlanes * 64;

// What the encoder needs besides the position: the most recent moves (newest
// first, absolute coordinates as played) and how often the position occurred
// before.
struct EncodeContext {
  const Move* recent = nullptr;
  int num_recent = 0;
  int repetitions = 0;
};

// Packed row: 40 little-endian uint64 bitboards (planes 0-39, bit = row*8+col
// in canonical coordinates), then 12 int8 scalars (planes 40-51).
void encode_packed(const Position& pos, const EncodeContext& ctx, uint8_t* out);
void encode_planes(const Position& pos, const EncodeContext& ctx, float* out);
void unpack_planes(const uint8_t* packed, float* out);  // 332 bytes -> 52*64 floats
void encode_game_packed(const Game& game, uint8_t* out);
void encode_game_planes(const Game& game, float* out);

// Actions. Canonical squares: sq = row*8 + col, row 0 = own home rank.
struct ActionInfo {
  int from;   // canonical origin square
  int to;     // canonical destination square
  int promo;  // PieceType of the promotion (QUEEN..KNIGHT) or -1
};
ActionInfo action_info(int action);
// Action index of a legal move `m` of `pos`, or -1 if it has none.
int action_of(const Position& pos, Move m);
// action_of() for each of `n` legal moves of `pos`.
void actions_of(const Position& pos, const Move* moves, int n, int* out);
// The legal move of `pos` that `action` denotes, or MOVE_NONE.
Move move_of(const Position& pos, int action);
// Legal actions of `pos` (order of the legal move list); returns the count.
int legal_actions(const Position& pos, int* out);
int mirror_action(int action);
// File reflection of float planes / a packed row, in place.
void mirror_planes(float* planes);
void mirror_packed(uint8_t* packed);

}  // namespace cz
