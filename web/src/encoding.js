// The network's input planes and action ids in JavaScript (SPEC 1-3).
//
// The native core owns this contract; this file is the page's second
// implementation of it, which is why the page refuses to play until it has
// reproduced the golden values that publication exported with the artifact
// (selfcheck.js), and why tests/test_web_encoder.py compares it with the core
// on the calibration positions and thousands of random ones.
//
// GameRecord is a chess.js game plus what the encoding needs beyond the
// board: the moves played since the start position (history planes) and a
// repetition key per position (planes 20-21). push/pop walk it along a
// search path and back.

import { Chess } from 'chess.js';

export const NUM_PLANES = 52;
export const NUM_ACTIONS = 1880;
export const HISTORY_MOVES = 8;

const PIECES = ['p', 'n', 'b', 'r', 'q', 'k'];
const RAYS = [[1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1], [1, -1]];
const KNIGHT = [[2, 1], [1, 2], [-1, 2], [-2, 1], [-2, -1], [-1, -2], [1, -2], [2, -1]];
const PROMOTIONS = ['q', 'r', 'b', 'n'];

// SPEC 3: from-to pairs (rays, knight steps) and promotions, numbered in order.
function buildActions() {
  const fromTo = new Int16Array(64 * 64).fill(-1);
  const promo = new Int16Array(8 * 3 * 4).fill(-1);
  const info = [];
  for (let from = 0; from < 64; from++) {
    const row = from >> 3, col = from & 7;
    const add = (to) => { fromTo[from * 64 + to] = info.length; info.push({ from, to, promo: null }); };
    for (const [dr, dc] of RAYS) {
      for (let d = 1; d <= 7; d++) {
        const r = row + dr * d, c = col + dc * d;
        if (r < 0 || r > 7 || c < 0 || c > 7) break;
        add(r * 8 + c);
      }
    }
    for (const [dr, dc] of KNIGHT) {
      const r = row + dr, c = col + dc;
      if (r >= 0 && r <= 7 && c >= 0 && c <= 7) add(r * 8 + c);
    }
    if (row === 6) {
      for (let off = -1; off <= 1; off++) {
        const c = col + off;
        if (c < 0 || c > 7) continue;
        PROMOTIONS.forEach((p, i) => {
          promo[(col * 3 + off + 1) * 4 + i] = info.length;
          info.push({ from, to: 56 + c, promo: p });
        });
      }
    }
  }
  if (info.length !== NUM_ACTIONS) throw new Error(`action table has ${info.length} entries, not ${NUM_ACTIONS}`);
  return { fromTo, promo, info };
}

const ACTIONS = buildActions();

/** Absolute square index (a1 = 0, h8 = 63) of an algebraic square. */
export function squareIndex(name) {
  return (name.charCodeAt(1) - 49) * 8 + (name.charCodeAt(0) - 97);
}

const canon = (sq, white) => (white ? sq : sq ^ 56);

/** The action id of a chess.js verbose move (castling: king -> own rook square). */
export function actionOf(move, white) {
  const from = squareIndex(move.from);
  let to = squareIndex(move.to);
  if (move.flags.includes('k')) to = (from & 56) | 7;
  else if (move.flags.includes('q')) to = from & 56;
  const f = canon(from, white), t = canon(to, white);
  if (move.promotion) {
    const off = (t & 7) - (f & 7);
    return ACTIONS.promo[((f & 7) * 3 + off + 1) * 4 + PROMOTIONS.indexOf(move.promotion)];
  }
  return ACTIONS.fromTo[f * 64 + t];
}

/** UCI text of a chess.js verbose move (castling as the king's move, e.g. e1g1). */
export function uciOf(move) {
  return move.from + move.to + (move.promotion || '');
}

// chess.js flag bits (its BITS table) -> its one-letter flags (Move.flags).
const FLAG_BITS = [[2, 'c'], [4, 'b'], [8, 'e'], [16, 'p'], [32, 'k'], [64, 'q']];

function squareOf0x88(sq) {
  return String.fromCharCode(97 + (sq & 15)) + String.fromCharCode(56 - (sq >> 4));
}

/**
 * Legal moves of a chess.js game as plain objects {from, to, flags, promotion,
 * internal}. chess.js's public moves({verbose: true}) builds each move's SAN
 * and FEN before and after (about 8 ms a position here), far too slow for a
 * search; this reads its move generator (_moves) directly. That is a private
 * method of the pinned chess.js version (package-lock.json): the encoder
 * test and the page's self-check fail if an upgrade changes it.
 */
function fastMoves(chess, square = undefined) {
  return chess._moves({ legal: true, square }).map((m) => ({
    from: squareOf0x88(m.from),
    to: squareOf0x88(m.to),
    flags: FLAG_BITS.filter(([bit]) => m.flags & bit).map(([, f]) => f).join('') || 'n',
    promotion: m.promotion,
    internal: m,
  }));
}

/** A chess game with the history the encoding needs (module comment). */
export class GameRecord {
  constructor(startFen) {
    this.chess = startFen ? new Chess(startFen) : new Chess();
    this.startFen = this.chess.fen();
    this.moves = []; // moves since the start position: chess.js verbose moves (with SAN) or search moves
    this.keys = [this._key(null)];
    this._legal = null;
  }

  static fromUci(startFen, ucis) {
    const game = new GameRecord(startFen);
    for (const uci of ucis) game.pushUci(uci);
    return game;
  }

  get white() { return this.chess.turn() === 'w'; }

  get ply() { return this.moves.length; }

  /** Legal moves of the current position, {from, to, flags, promotion} (cached until the next push/pop). */
  legalMoves() {
    if (this._legal === null) this._legal = fastMoves(this.chess);
    return this._legal;
  }

  /** Sorted legal action ids. */
  legalActions() {
    const white = this.white;
    return this.legalMoves().map((m) => actionOf(m, white)).sort((a, b) => a - b);
  }

  /** Plays a move of legalMoves() (or {from, to, promotion}) through chess.js's public API;
   *  the recorded move has its SAN. Throws on an illegal move. */
  push(move) {
    const made = this.chess.move({ from: move.from, to: move.to, promotion: move.promotion });
    return this._record(made);
  }

  /** Plays a move of legalMoves() without SAN (searches, replays); undone by pop(). */
  pushFast(move) {
    this.chess._makeMove(move.internal);
    return this._record(move);
  }

  _record(made) {
    this.moves.push(made);
    this._legal = null;
    this.keys.push(this._key(made));
    return made;
  }

  pushUci(uci) {
    if (!/^[a-h][1-8][a-h][1-8][qrbn]?$/.test(uci)) throw new Error(`not a UCI move: ${JSON.stringify(uci)}`);
    const candidates = this._legal ?? fastMoves(this.chess, uci.slice(0, 2)); // one square's moves: cheaper
    const move = candidates.find((m) => uciOf(m) === uci);
    if (!move) throw new Error(`illegal move ${uci} in ${this.chess.fen()}`);
    return this.pushFast(move);
  }

  pop() {
    const last = this.moves.pop();
    if (last.internal) this.chess._undoMove();
    else this.chess.undo();
    this.keys.pop();
    this._legal = null;
  }

  /** True when a move of legalMoves() checkmates. It is tried on chess.js's
   *  board alone: the record (history, repetition keys, the cached legal
   *  moves) stays as it is, which spares a FEN per move tried. */
  mates(move) {
    this.chess._makeMove(move.internal);
    const mate = this.chess.isCheck() && this.chess._moves({ legal: true }).length === 0;
    this.chess._undoMove();
    return mate;
  }

  /** SAN of a move of legalMoves() in the current position. */
  san(move) {
    const made = this.chess.move({ from: move.from, to: move.to, promotion: move.promotion });
    this.chess.undo();
    return made.san;
  }

  halfmoveClock() {
    return Number(this.chess.fen().split(' ')[4]);
  }

  /** The en-passant target square when an en-passant capture is legal, else null. */
  epSquare() {
    const last = this.moves[this.moves.length - 1];
    if (last ? !last.flags.includes('b') : this.chess.fen().split(' ')[3] === '-') return null;
    const ep = this.legalMoves().find((m) => m.flags.includes('e'));
    return ep ? ep.to : null;
  }

  // Position identity (SPEC 2): pieces, side to move, castling rights, legal en-passant square.
  _key(made) {
    const parts = this.chess.fen().split(' ');
    let ep = null;
    if (made === null ? parts[3] !== '-' : made.flags.includes('b')) ep = this.epSquare();
    return `${parts[0]} ${parts[1]} ${parts[2]} ${ep || '-'}`;
  }

  /** Earlier occurrences of the current position within the halfmove window (as the core counts). */
  repetitions() {
    const n = this.keys.length - 1;
    const window = Math.min(this.halfmoveClock(), n);
    let count = 0;
    for (let back = 4; back <= window; back += 2) if (this.keys[n - back] === this.keys[n]) count++;
    return count;
  }

  /** Why the game is over by the rules (SPEC 6), or null. */
  termination() {
    if (this.legalMoves().length === 0) return this.chess.isCheck() ? 'checkmate' : 'stalemate';
    if (this.chess.isInsufficientMaterial()) return 'insufficient material';
    if (this.halfmoveClock() >= 100) return 'fifty moves';
    if (this.repetitions() >= 2) return 'threefold repetition';
    return null;
  }
}

/** The 52 x 8 x 8 input planes of the current position (SPEC 2), as a Float32Array. */
export function encode(game, out = new Float32Array(NUM_PLANES * 64)) {
  out.fill(0);
  const chess = game.chess;
  const white = game.white;
  const us = white ? 'w' : 'b', them = white ? 'b' : 'w';
  const set = (plane, sq) => { out[plane * 64 + canon(sq, white)] = 1; };
  const fill = (plane, value) => { out.fill(value, plane * 64, plane * 64 + 64); };
  const counts = { w: [0, 0, 0, 0, 0, 0], b: [0, 0, 0, 0, 0, 0] };
  const bishops = { w: [], b: [] };
  chess.board().forEach((rank, i) => rank.forEach((piece, col) => {
    if (!piece) return;
    const sq = (7 - i) * 8 + col;
    const t = PIECES.indexOf(piece.type);
    counts[piece.color][t]++;
    if (piece.type === 'b') bishops[piece.color].push(sq);
    set(piece.color === us ? t : 6 + t, sq);
    set(piece.color === us ? 16 : 17, sq);
  }));
  const own = chess.getCastlingRights(us), opp = chess.getCastlingRights(them);
  if (own.k) fill(12, 1);
  if (own.q) fill(13, 1);
  if (opp.k) fill(14, 1);
  if (opp.q) fill(15, 1);
  if (chess.isCheck()) {
    const king = chess.findPiece({ type: 'k', color: us })[0];
    for (const sq of chess.attackers(king, them)) set(18, squareIndex(sq));
  }
  const ep = game.epSquare();
  if (ep) set(19, squareIndex(ep));
  const reps = game.repetitions();
  if (reps >= 1) fill(20, 1);
  if (reps >= 2) fill(21, 1);
  const moves = game.moves;
  for (let k = 0; k < HISTORY_MOVES && k < moves.length; k++) {
    const m = moves[moves.length - 1 - k];
    set(22 + 2 * k, squareIndex(m.from));
    set(23 + 2 * k, squareIndex(m.to));
  }
  for (let sq = 0; sq < 64; sq++) if (((sq >> 3) + (sq & 7)) % 2 === 1) out[38 * 64 + sq] = 1;
  const dark = (sq) => ((sq >> 3) + (sq & 7)) % 2 === 0;
  if (bishops.w.length === 1 && bishops.b.length === 1 && dark(bishops.w[0]) !== dark(bishops.b[0])) fill(39, 1);
  for (let t = 0; t < 5; t++) fill(40 + t, counts[us][t] - counts[them][t]);
  fill(46, Math.min(game.halfmoveClock(), 100));
  for (let t = 0; t < 5; t++) fill(47 + t, counts[us][t]);
  return out;
}

/** Hex SHA-256 of the planes' float32 little-endian bytes (what the golden file records). */
export async function planesSha256(planes) {
  return sha256Hex(new Uint8Array(planes.buffer, planes.byteOffset, planes.byteLength));
}

/** Hex SHA-256 of bytes (Web Crypto: browsers offer it on https:// and localhost pages only). */
export async function sha256Hex(bytes) {
  if (!globalThis.crypto?.subtle) {
    throw new Error('this page needs SHA-256 (Web Crypto), which browsers offer only on https:// or '
      + 'localhost pages: open it as http://127.0.0.1 or http://localhost, or serve it over HTTPS');
  }
  const digest = await globalThis.crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}
