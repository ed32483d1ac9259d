// Layer 5 (search): tree nodes and the arena that holds them.
//
// A node is both a position and the edge that leads to it from its parent.
// Children of a node are one contiguous block, created when the node is
// first reached (from the legal-move list) and sorted once the network
// answers: children that end the game first, then by prior. Nodes are
// addressed by index, so
// the arena can grow without invalidating anything; the root is always
// index 0. The arena keeps its memory between searches and games, so a tree
// in steady state allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cz {

enum class NodeState : uint8_t {
  NEW = 0,       // never reached: no children, no value
  PENDING = 1,   // children created, network evaluation requested, not back yet
  EXPANDED = 2,  // network prior and value applied; selection descends here
  TERMINAL = 3,  // game over here (or a repetition inside the tree); `raw` holds the exact value
};

// Game-theoretic bounds of a node's value from its side to move, each one of
// -1 (loss), 0 (draw), +1 (win): the value is known to lie in [lo, hi]. A
// node is proven when lo == hi; `plies` is then the distance in plies to the
// end of the game along best play (0 at a terminal node): the shortest win,
// the longest loss, the shortest draw.
constexpr int8_t kLoss = -1, kDraw = 0, kWin = 1;

constexpr uint32_t kNoNode = 0xFFFFFFFFu;

struct Node {
  float n = 0;      // visits (fractional after subtree reuse scales them)
  float w = 0;      // sum of backed-up values, from this node's side to move
  float prior = 0;  // network prior P(parent, move), without root noise
  float raw = 0;    // network value W - L (or exact terminal value), this node's side to move
  uint32_t parent = kNoNode;
  uint32_t first_child = kNoNode;
  uint16_t move = 0;    // Move::data of the move from the parent
  uint16_t action = 0;  // action index of that move, in the parent's canonical frame
  uint8_t num_children = 0;
  NodeState state = NodeState::NEW;
  uint16_t inflight = 0;  // traversals through this node still waiting for a value
  int8_t lo = kLoss;      // lower bound of the game-theoretic value (see kLoss)
  int8_t hi = kWin;       // upper bound
  uint16_t plies = 0;     // plies to the end of the game when proven
  float m = 0;            // sum of backed-up plies left in the game, from this node, over the n visits

  float value() const { return n > 0 ? w / n : raw; }  // mean value, own side to move
  float moves_left() const { return n > 0 ? m / n : 0.0f; }  // mean plies left (0 before a visit)
  bool proven() const { return lo == hi; }
  void prove(int8_t v, uint16_t distance) { lo = hi = v, plies = distance; }
};
static_assert(sizeof(Node) == 40, "Node layout changed");

class NodeArena {
 public:
  void reserve(size_t n) { nodes_.reserve(n); }
  void clear() { nodes_.clear(); }
  size_t size() const { return nodes_.size(); }
  size_t capacity() const { return nodes_.capacity(); }
  Node& operator[](uint32_t i) { return nodes_[i]; }
  const Node& operator[](uint32_t i) const { return nodes_[i]; }

  // A block of `count` fresh nodes; returns the index of the first.
  uint32_t alloc(int count) {
    uint32_t first = uint32_t(nodes_.size());
    nodes_.resize(nodes_.size() + size_t(count));
    return first;
  }

  // Copies the subtree under `from` into `dst` (cleared first) with `from` as
  // the new root at index 0, multiplying visits and value sums by `scale`.
  void extract_subtree(uint32_t from, float scale, NodeArena& dst) const;

  void swap(NodeArena& other) { nodes_.swap(other.nodes_); }

 private:
  std::vector<Node> nodes_;
};

}  // namespace cz
