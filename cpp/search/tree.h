// Layer 5 (search): one PUCT search tree over a game's current position.
//
// The owner drives it in three steps, never calling the network itself:
//   begin_search(visits)            set the root-visit target (and root noise)
//   traverse(planes) -> LEAF        a leaf to evaluate; its planes are written
//   append_actions(leaf, actions)   the actions whose logits apply() needs
//   apply(leaf, legal, wdl)         the network answer: expand, then back up
//                                   with backup_step()
// until done(). Several traversals may wait at once (virtual loss); a
// traversal never goes to a leaf already waiting for the network. Terminal
// positions (mate, stalemate, insufficient material, fifty moves, threefold
// repetition over the game history plus the path, and with `twofold_draws`
// any repetition below the root) are backed up at once with their exact
// value. Values are W - L from the side to move of each node and are
// multiplied by `discount` for every ply they travel up.
//
// Proven results (`proven_results`, an MCTS-solver after Lc0's certainty
// propagation): when a node is expanded, each child whose move ends the game
// is classified at once (no network call), and every node keeps bounds on
// its game-theoretic value (node.h). A node with a child proven lost for the
// opponent is a proven win; one whose children are all proven wins for the
// opponent a proven loss; draws and bounds likewise. Bounds propagate up
// when they change. A traversal that reaches a proven node backs its exact
// value (discounted by its distance to the end) up at once, so no visits are
// spent inside a proven subtree; the root prefers the shortest proven win,
// avoids proven losses (the longest when all lose), and a search ends as soon
// as its root is proven. Proofs survive subtree reuse: the positions that
// precede a node (game plus path) do not change when the root advances.
//
// After a move, advance() makes the played child the root and keeps
// `subtree_retention` of every retained node's statistics.
//
// Gumbel root (`root` = GUMBEL, gumbel.h): once the root is expanded, the m
// moves with the best g + logit (proven losses left out while another move
// remains) are considered; each simulation goes to the best-scoring
// considered move (g + logit + sigma(q)) at the halving schedule's level;
// the move to play is the best-scoring among those with the most visits of
// this search (a proven win first); the policy target is the completed-Q
// improved policy. Below the root, PUCT as above.
#pragma once

#include <vector>

#include "core/game.h"
#include "search/node.h"
#include "search/options.h"
#include "search/puct.h"
#include "search/rng.h"

namespace cz {

struct Traversal {
  enum Kind : int { LEAF = 0, TERMINAL = 1, COLLISION = 2 };
  Kind kind;
  uint32_t node;  // the leaf waiting for the network (LEAF only)
};

// A value on its way from a node up to the root (see Tree::backup_step).
struct Backup {
  uint32_t node;  // the next node to update, kNoNode once the root is done
  float value;    // from that node's side to move
  float plies;    // plies left in the game from that node (the moves-left estimate)
};

// Root statistics of one child after a search.
struct RootChild {
  Move move;
  int action = 0;
  float visits = 0;      // raw visits (retained ones included)
  float target = 0;      // visits after forced-playout pruning (the policy target)
  float prior = 0;       // network prior, no noise
  float root_prior = 0;  // prior used at the root (noise mixed in when active)
  float q = 0;           // backed-up value from the root's side to move (FPU value when unvisited)
  int proven = -2;       // proven result of the move for the root's side: 1 win, 0 draw, -1 loss, -2 unknown
  int plies = 0;         // plies from the root to the end of the game along the proof (when proven)
  // Gumbel root only (SearchOptions::root == GUMBEL):
  bool considered = false;  // among the m moves the halving considered
  float search_visits = 0;  // visits of this search alone (retained ones excluded)
  float gumbel = 0;         // the move's Gumbel noise g (0 without noise)
  float moves_left = 0;     // mean plies left backed up through the move (0 when unvisited)
  float utility = 0;        // the moves-left utility selection adds to q (0 when off)
};

// What a finished search says about the root.
struct RootSummary {
  float visits = 0;      // root visits
  float value = 0;       // root value, side to move
  float raw_value = 0;   // network value of the root position
  float best_q = 0;      // q of the most visited child
  float surprise = 0;    // KL(target / sum || prior) over legal moves
  int best = -1;         // index (in the child list) of the move to play at temperature 0
  int proven = -2;       // proven result of the root for its side: 1 win, 0 draw, -1 loss, -2 unknown
  int plies = 0;         // plies to the end of the game along the proof (when proven)
  float moves_left = 0;  // mean plies left backed up through the root
};

class Tree {
 public:
  explicit Tree(const SearchOptions& options = SearchOptions{}, uint64_t seed = 0);

  void set_options(const SearchOptions& options) { opt_ = options; }
  const SearchOptions& options() const { return opt_; }
  Rng& rng() { return rng_; }
  void reserve(size_t nodes) { nodes_.reserve(nodes); }

  // Drops all statistics; the root becomes `game`'s current position.
  void reset(const Game& game);
  // Plays legal root move `m`: its subtree becomes the tree (statistics scaled
  // by subtree_retention), or a fresh root when the child was never reached.
  // `scratch` is working memory (swapped with the tree's own arena).
  void advance(Move m, NodeArena& scratch);

  // Starts a search that stops when the root has `visits` visits (visits kept
  // from an earlier search count). `noise` mixes root Dirichlet noise into
  // the root prior when dirichlet_epsilon > 0. With the Gumbel root the
  // search runs `visits` simulations of its own (plus the root's evaluation
  // when it is new) and `noise` draws the Gumbel noise (else g = 0).
  void begin_search(int visits, bool noise);
  bool needs_leaf() const;  // another traversal may start now
  bool done() const;        // target reached and nothing in flight
  int inflight() const { return nodes_[0].inflight; }

  // One traversal. LEAF writes the leaf's 52x64 planes to `planes`.
  Traversal traverse(float* planes);
  // Appends the actions of a LEAF's legal moves (child order): the entries
  // of a network row over the 1,880 actions that apply() needs.
  void append_actions(uint32_t leaf, std::vector<uint16_t>& out) const;
  // Network answer for a LEAF: the logits of its legal moves (in
  // append_actions() order), WDL probabilities and the plies left in the game
  // (the length head's estimate; 0 when the network gives none). Expands the
  // leaf and returns its value, still to be backed up: call backup_step()
  // until it returns false. (An owner answering many leaves steps all their
  // backups a ply at a time, so the cache misses of independent paths overlap.)
  Backup apply(uint32_t leaf, const float* legal_logits, const float* wdl, float moves_left = 0.0f);
  // Adds `b` to its node's statistics and moves it to the parent (the value
  // discounted and negated, one more ply left); false once the root was updated.
  bool backup_step(Backup& b) {  // (inline: the owners' hot loop)
    Node& x = nodes_[b.node];
    x.n += 1.0f;
    x.w += b.value;
    x.m += b.plies;
    x.inflight--;
    b.node = x.parent;
    b.value = -opt_.discount * b.value;
    b.plies += 1.0f;
    return b.node != kNoNode;
  }

  const Position& root_position() const { return root_pos_; }
  const Node& root() const { return nodes_[0]; }
  bool root_expanded() const { return nodes_[0].state == NodeState::EXPANDED; }
  bool root_proven() const { return opt_.proven_results && nodes_[0].proven(); }
  bool proven_enough() const;  // the root is proven and has a whole visit: the search is over
  size_t node_count() const { return nodes_.size(); }
  uint64_t collisions() const { return collisions_; }
  // Depth statistics of the traversals since the search began (reset by
  // reset, advance and begin_search): deepest ply reached (UCI seldepth) and
  // the mean ply of the leaves and terminals reached (UCI depth).
  int seldepth() const { return seldepth_; }
  float mean_depth() const { return depth_count_ ? float(double(depth_sum_) / double(depth_count_)) : 0.0f; }

  // Cache hints for an owner that starts traversals in many trees in turn,
  // each stage a tree ahead of the next so none waits for memory:
  // prefetch_tree() (this object), prefetch_root() (reads this object),
  // prefetch_root_children() (reads the root).
  void prefetch_tree() const;
  void prefetch_root() const;
  void prefetch_root_children() const;

  // Children of the root with raw and pruned visits (fills `out`).
  RootSummary summarize(std::vector<RootChild>& out) const;
  // The move to play from a finished search (needs an evaluated root).
  Move choose_move(const MoveChoiceOptions& choice, int ply, std::vector<RootChild>& scratch);
  // Most-visited line from the root, at most `max_len` moves.
  void principal_variation(std::vector<Move>& out, int max_len) const;
  // Moves from the root to `node` (for diagnostics and tests).
  void path_to(uint32_t node, std::vector<Move>& out) const;
  // Every proven node below the root (diagnostics and tests): index, result
  // for its side to move (kLoss, kDraw, kWin) and plies to the end.
  struct Proof {
    uint32_t node;
    int result;
    int plies;
  };
  void proofs(std::vector<Proof>& out) const;

 private:
  // Prior of root child i as selection sees it (noise mixed in when active).
  float root_prior(int i) const;
  // Gumbel root: set up once the root is expanded (noise, logits, the
  // considered moves); the root child a simulation goes to (kNoNode: none
  // can be chosen now); sigma of every root child from completed Q, into
  // `sigma`; the child index of the move to play (-1: none considered).
  void init_gumbel();
  uint32_t select_gumbel();
  void gumbel_sigma(float* sigma) const;
  bool gumbel_lost(int i) const;  // root child i is a proven loss for the root's side
  float gumbel_search_visits(int i) const;
  int gumbel_choice(const float* sigma) const;
  bool gumbel_on() const { return gumbel_.active; }
  // Q of `child` (proven or not) from the side to move of its parent, which
  // is `depth` plies below the root, with first-play urgency `fpu` (puct.h).
  float child_q(const Node& child, bool proven, int depth, float fpu) const;
  // Exact value of a proven node at `depth` plies below the root, from its
  // side to move: +-discount^plies, or the draw value at that depth.
  float proven_value(const Node& x, int depth) const;
  // Value of a draw at `depth` plies below the root, from that node's side to move.
  float draw_value(int depth) const { return depth & 1 ? -draw_root_ : draw_root_; }
  void set_draw_side(float root_value);
  template <bool Root>
  uint32_t select(uint32_t node, int depth) const;  // the child to descend to, kNoNode if none
  void expand_children(uint32_t node, const Position& pos, const MoveList& moves);
  // Classifies the children of `node` (at `pos`) that end the game.
  void classify_children(uint32_t node, const Position& pos);
  // Recomputes the bounds of `node` from its children, and of its ancestors while they change.
  void prove_up(uint32_t node);
  void backup(uint32_t node, float value, float plies);
  // The moves-left utility of visited child `c` of `parent` whose Q is `q` (0 when off).
  float moves_left_utility(const Node& parent, const Node& c, float q) const {
    if (opt_.moves_left_slope <= 0 || c.n <= 0 || parent.n <= 0) return 0.0f;
    return puct::moves_left_utility(q, c.moves_left(), parent.moves_left(), opt_.moves_left_slope,
                                    opt_.moves_left_cap, opt_.moves_left_linear, opt_.moves_left_quadratic);
  }
  // Plies left that proven or terminal node `x` backs up: its distance to
  // the end of the game, except that with the utility on a draw is
  // length-neutral (its parent's mean plies left less one). A repetition
  // inside the tree is scored a draw but does not end the game; backing up 0
  // there made subtrees holding repetitions look short, so the side ahead
  // was drawn into them and the side behind kept out of them.
  float end_plies(const Node& x) const {
    if (opt_.moves_left_slope <= 0 || x.lo != kDraw || x.hi != kDraw || x.parent == kNoNode) return float(x.plies);
    const Node& p = nodes_[x.parent];
    return p.n > 0 ? std::max(0.0f, p.moves_left() - 1.0f) : float(x.plies);
  }
  void undo(uint32_t node);
  // The value of `leaf` with its leaf material blended in (SearchOptions::leaf_material).
  float blend_leaf_material(uint32_t leaf, float value);
  int depth_of(uint32_t node) const;  // plies from the root
  // The child a proven node's result comes from: the shortest win or draw, the longest loss.
  uint32_t proof_child(const Node& x) const;
  // Earlier occurrences of `key` (a position with `halfmove_clock`, one ply
  // after the last entry of keys_ when `next` is set) in the game and path.
  int repetitions_of(Key key, int halfmove_clock, bool next) const;
  void encode(const Position& pos, int repetitions, float* planes) const;
  void make_noise();
  void note_depth() {
    const int d = int(path_.size());
    seldepth_ = d > seldepth_ ? d : seldepth_;
    depth_sum_ += uint64_t(d);
    ++depth_count_;
  }
  void clear_depths() { seldepth_ = 0, depth_sum_ = 0, depth_count_ = 0; }

  SearchOptions opt_;
  Rng rng_;
  NodeArena nodes_;
  Position root_pos_;
  std::vector<Key> keys_;         // game positions up to the root, then the current path
  size_t history_len_ = 0;        // keys_ entries that belong to the game
  std::vector<Move> history_;     // last kHistoryMoves game moves, oldest first
  std::vector<Move> path_;        // moves of the current traversal
  std::vector<float> noise_;      // root Dirichlet sample, one per root child
  std::vector<double> weights_;   // move-sampling weights (scratch)
  std::vector<Node> sort_scratch_;  // children being reordered by apply() (scratch)
  // Leaf material values (tanh(m / scale)) of the leaves awaiting apply(),
  // when SearchOptions::leaf_material is on.
  std::vector<std::pair<uint32_t, float>> leaf_material_;
  struct GumbelRoot {             // per root child, in child order
    bool wanted = false;          // set up once the root is expanded
    bool active = false;          // set up for the current search
    bool noise = false;           // draw g (else 0)
    int budget = 0;               // simulations of this search
    int m = 0;                    // considered moves
    std::vector<float> g, logit, base;  // noise, log prior, visits held when the search began
    std::vector<uint8_t> considered;
  } gumbel_;
  bool noise_active_ = false;     // noise_ mixes into the root prior
  bool noise_wanted_ = false;     // sample noise as soon as the root is expanded
  float target_ = 0;              // root visits that end the search
  float draw_root_ = 0;           // value of a draw for the root's side to move (draw_score)
  bool draw_side_wanted_ = false; // set draw_root_ once the root is evaluated
  uint64_t collisions_ = 0;       // traversals abandoned because every choice was waiting
  int seldepth_ = 0;              // deepest traversal of this search
  uint64_t depth_sum_ = 0;        // sum of the depths of this search's traversals
  uint64_t depth_count_ = 0;      // traversals that reached a leaf or a terminal
};

}  // namespace cz
