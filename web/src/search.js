// A small PUCT search in the page, with SPEC 6's evaluation settings, as the
// native search (cpp/search/tree.cpp, puct.h) applies them:
//
//   score = Q + c * P * sqrt(max(1, N)) / (1 + n),  c = 1.0, no root noise,
//   no forced playouts; an unvisited child's Q is the parent's value - 0.2
//   (first-play urgency); values are backed up negated and multiplied by
//   0.99 per ply; the move played is the most visited (ties: higher prior).
//
// Positions that end the game are scored without the network (checkmate -1
// for the side to move, other endings 0), and inside the tree a position that
// repeats an earlier one of the game or the search path scores a draw
// (twofold, as the native search does). As in the native search, a position
// is recognised as won when it is expanded and one of its moves mates, so a
// mate in one is never missed whatever its prior: such a position backs up
// +1 from then on, and at the root the mating move is played at once. Not
// here: the rest of the native search's proven results (proofs through more
// plies, proven draws and losses), parallel leaves and subtree reuse: every
// call searches afresh, one leaf per network call.

import { actionOf, encode, NUM_ACTIONS, NUM_PLANES, uciOf } from './encoding.js';

export const SETTINGS = { cPuct: 1.0, fpuReduction: 0.2, discount: 0.99 };

class Node {
  constructor(move, prior) {
    this.move = move; // chess.js verbose move leading here (null at the root)
    this.prior = prior;
    this.n = 0;
    this.w = 0; // sum of backed-up values, this node's side to move
    this.children = null;
    this.terminal = null; // exact value for the side to move: the game ended here (-1, 0), or a move mates (+1)
    this.mate = null; // that mating child
  }

  value() { return this.n > 0 ? this.w / this.n : 0; }
}

/** Legal moves with their priors (policy softmaxed over the legal actions), highest first. */
export function priors(game, logits, offset = 0) {
  const white = game.white;
  const moves = game.legalMoves();
  const z = moves.map((m) => logits[offset + actionOf(m, white)]);
  const top = Math.max(...z);
  const e = z.map((v) => Math.exp(v - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return moves.map((m, i) => ({ move: m, prior: e[i] / sum })).sort((a, b) => b.prior - a.prior);
}

function childQ(child, fpu) {
  return child.n > 0 ? (-SETTINGS.discount * child.w) / child.n : fpu;
}

function select(node) {
  const cu = SETTINGS.cPuct * Math.sqrt(Math.max(1, node.n));
  const fpu = node.value() - SETTINGS.fpuReduction;
  let best = null, bestScore = -Infinity;
  for (const c of node.children) {
    const score = childQ(c, fpu) + (cu * c.prior) / (1 + c.n);
    if (score > bestScore) { bestScore = score; best = c; }
  }
  return best;
}

/**
 * Searches `game` (a GameRecord, left as it was) to `visits` root visits with
 * `net.evaluate(planes, n)` -> {logits, wdl}. Returns the chosen move, the
 * root's network WDL, the backed-up value, the principal variation, every
 * root move's visits and prior, and the time taken (seconds; netSeconds of it
 * waiting for the network).
 */
export async function search(game, net, visits) {
  if (game.termination() !== null) throw new Error(`the game is over (${game.termination()})`);
  const planes = new Float32Array(NUM_PLANES * 64);
  const root = new Node(null, 1);
  let rootWdl = null;
  let evaluations = 0;
  let netMs = 0; // time spent waiting for the network
  const started = performance.now();
  while (root.n < visits) {
    const path = [root];
    let node = root;
    while (node.children !== null && node.terminal === null) {
      node = select(node);
      game.pushFast(node.move);
      path.push(node);
    }
    let value;
    if (node.terminal !== null) {
      value = node.terminal;
    } else {
      const ending = game.termination();
      if (ending !== null) {
        node.terminal = ending === 'checkmate' ? -1 : 0;
        value = node.terminal;
      } else if (node !== root && game.repetitions() >= 1) {
        value = 0; // twofold inside the tree: a draw (not stored; the game itself goes on)
      } else {
        encode(game, planes);
        const asked = performance.now();
        const { logits, wdl } = await net.evaluate(planes, 1);
        netMs += performance.now() - asked;
        evaluations++;
        if (logits.length !== NUM_ACTIONS) throw new Error(`the network returned ${logits.length} policy logits`);
        node.children = priors(game, logits).map(({ move, prior }) => new Node(move, prior));
        value = wdl[0] - wdl[2];
        if (node === root) rootWdl = Array.from(wdl);
        node.mate = node.children.find((c) => game.mates(c.move)) ?? null;
        if (node.mate) {
          node.terminal = 1;
          value = 1;
        }
      }
    }
    for (let i = path.length - 1; i >= 0; i--) {
      path[i].n += 1;
      path[i].w += value;
      value = -SETTINGS.discount * value;
      if (i > 0) game.pop();
    }
    if (root.mate) break; // mate in one: nothing to search
  }
  const ranked = [...root.children].sort((a, b) => b.n - a.n || b.prior - a.prior);
  if (root.mate) ranked.unshift(...ranked.splice(ranked.indexOf(root.mate), 1));
  const pv = [];
  for (let node = ranked[0]; node; node = node.children && [...node.children].sort((a, b) => b.n - a.n)[0]) {
    if (node.n === 0) break;
    pv.push(uciOf(node.move));
  }
  return {
    best: ranked[0].move, // play it with game.push (the game's record keeps SAN)
    wdl: rootWdl,
    value: root.value(),
    visits: root.n,
    evaluations,
    seconds: (performance.now() - started) / 1000,
    netSeconds: netMs / 1000,
    pv,
    moves: ranked.map((c, i) => ({ uci: uciOf(c.move), san: i < 8 ? game.san(c.move) : null, visits: c.n, prior: c.prior })),
  };
}
