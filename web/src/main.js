// The play page: load the model and its golden file, check the encoding, then
// play. The board is chessground, the rules chess.js (through GameRecord);
// the model thinks in this browser (search.js over ONNX Runtime Web) or on
// the server (POST /api/think, the native search behind `chesszero uci`).
//
// Instead of a person, a ladder rung can take the other seat (POST
// /api/opponent): the page then plays the game out by itself.
//
// URL parameters set the controls' starting values: side=white|black (the
// colour of the human or rung), visits=N, mode=browser|server, opponent=RUNG,
// fen=FEN (the start position; a malformed one is refused with the reason and
// the page does not play until a valid one, or none, is given).
// window.czState exposes the page's progress (self-check, the start position, the optimised
// session's check, the model's and the opponent's moves, the model's with
// their times and session) to the browser test, and
// czState.marks the milestones of the way to the first model move, in
// milliseconds since the page was opened (performance.now()): script (this
// bundle starts), runtime (ONNX Runtime started), fetched (model bytes),
// session (a session over the model), golden (golden file read), encoded
// (golden positions re-encoded), checked (self-check done), searched (the
// first model move's search done), shown (that move on the board).

import 'chessground/assets/chessground.base.css';
import 'chessground/assets/chessground.brown.css';
import 'chessground/assets/chessground.cburnett.css';
import './style.css';

import { Chessground } from 'chessground';

import { GameRecord, uciOf } from './encoding.js';
import { loadNet, startRuntime } from './net.js';
import { search } from './search.js';
import { checkNetwork, encodeGolden } from './selfcheck.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);
const state = (window.czState = { selfCheck: 'pending', failures: [], modelMoves: [], opponentMoves: [], errors: [],
  marks: {} });
const mark = (name) => { state.marks[name] ??= performance.now(); }; // the first time only
mark('script');
// ONNX Runtime starts while the model and the golden file download (a failure is reported by loadNet).
startRuntime().then(() => mark('runtime'), () => {});

let info = null;
let net = null; // the evaluator the in-browser search uses: a checked one (start, optimize)
let checked = null; // what the self-check ran on: {encoded, bytes}
let optimizing = null;
let game = new GameRecord();
let startError = null; // why the start position field's FEN was refused, or null
let human = params.get('side') === 'black' ? 'b' : 'w'; // the seat of the person or the rung
let rung = params.get('opponent') || ''; // a ladder rung in that seat, or '' for a person
let gameId = 0; // a new game ends the moves still underway for the old one
let thinking = false;
let board = null;

function setStatus(text, kind = '') {
  const el = $('status');
  el.textContent = text;
  el.className = kind;
}

function dests() {
  const map = new Map();
  if (rung || thinking || game.chess.turn() !== human || game.termination() !== null
    || state.selfCheck !== 'passed' || startError !== null) return map;
  for (const m of game.legalMoves()) {
    if (!map.has(m.from)) map.set(m.from, []);
    if (!map.get(m.from).includes(m.to)) map.get(m.from).push(m.to);
  }
  return map;
}

function redraw() {
  const last = game.moves[game.moves.length - 1];
  board.set({
    fen: game.chess.fen(),
    orientation: human === 'w' ? 'white' : 'black',
    turnColor: game.chess.turn() === 'w' ? 'white' : 'black',
    lastMove: last ? [last.from, last.to] : undefined,
    check: game.chess.isCheck(),
    movable: { color: human === 'w' ? 'white' : 'black', dests: dests() },
  });
  renderMoves();
  const ending = game.termination();
  if (ending !== null && state.selfCheck === 'passed') setStatus(`Game over: ${ending}. ${resultText()}`, 'done');
}

function resultText() {
  const ending = game.termination();
  if (ending === null) return '*';
  if (ending !== 'checkmate') return '1/2-1/2';
  return game.chess.turn() === 'w' ? '0-1' : '1-0';
}

function renderMoves() {
  const list = $('moves');
  list.innerHTML = '';
  // numbered from the start position's move number; a game that starts with Black to move opens with "N..."
  const [, turn, , , , fullmove] = game.startFen.split(' ');
  const blackFirst = turn === 'b' ? 1 : 0;
  game.moves.forEach((m, i) => {
    const white = (i + blackFirst) % 2 === 0;
    if (white || i === 0) {
      const number = document.createElement('span');
      number.className = 'number';
      number.textContent = `${Number(fullmove) + Math.floor((i + blackFirst) / 2)}${white ? '.' : '...'}`;
      list.append(number);
    }
    const span = document.createElement('span');
    span.className = 'san';
    span.dataset.uci = uciOf(m);
    span.textContent = m.san;
    list.append(span);
  });
}

function showAnalysis(result, mode) {
  const wdl = result.wdl;
  const side = game.chess.turn() === 'w' ? 'White' : 'Black';
  $('eval-side').textContent = `${mode === 'browser' ? 'In-browser' : 'Server'} search, ${Math.round(result.visits)} visits, ${side} to move`;
  if (wdl) {
    const [w, d, l] = wdl.map((v) => (100 * v).toFixed(1));
    // In the browser: the network's own WDL at the root; from the server: SPEC 5's wdl(v) of the search value.
    const what = mode === 'browser' ? 'network' : 'search';
    $('wdl-text').textContent = `${what}: win ${w}% · draw ${d}% · loss ${l}% (search value ${result.value.toFixed(3)})`;
    $('wdl-w').style.width = `${w}%`;
    $('wdl-d').style.width = `${d}%`;
    $('wdl-l').style.width = `${l}%`;
  }
  const body = $('top-moves');
  body.innerHTML = '';
  const total = result.moves.reduce((a, m) => a + m.visits, 0) || 1;
  for (const m of result.moves.slice(0, 6)) {
    const row = document.createElement('tr');
    for (const text of [m.san || m.uci, `${((100 * m.visits) / total).toFixed(1)}%`, `${(100 * m.prior).toFixed(1)}%`]) {
      const cell = document.createElement('td');
      cell.textContent = text;
      row.append(cell);
    }
    body.append(row);
  }
  $('pv').textContent = result.pv.length ? `PV: ${result.pv.join(' ')}` : '';
}

async function thinkOnServer(visits) {
  const response = await fetch('/api/think', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ start_fen: game.startFen, moves: game.moves.map(uciOf), visits }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `server answered ${response.status}`);
  const byUci = new Map(game.legalMoves().map((m) => [uciOf(m), m]));
  body.moves = body.moves.map((m, i) => ({ ...m, san: i < 8 && byUci.has(m.uci) ? game.san(byUci.get(m.uci)) : null }));
  body.best = byUci.get(body.bestmove);
  if (!body.best) throw new Error(`the server's move ${body.bestmove} is not legal here`);
  return body;
}

async function modelMove() {
  if (game.termination() !== null || game.chess.turn() === human) return;
  const id = gameId;
  thinking = true;
  redraw();
  const mode = $('mode').value;
  const visits = Math.max(1, Number($('visits').value) || 1);
  setStatus(`The model is thinking (${mode === 'browser' ? 'in this browser' : 'on the server'}, ${visits} visits)…`, 'busy');
  try {
    const evaluator = net;
    const result = mode === 'browser' ? await search(game, evaluator, visits) : await thinkOnServer(visits);
    if (id !== gameId) return;
    mark('searched');
    showAnalysis(result, mode);
    const made = game.push(result.best);
    state.modelMoves.push({ uci: uciOf(made), mode, visits, at: performance.now(), evaluations: result.evaluations,
      seconds: result.seconds, netSeconds: result.netSeconds, optimized: mode === 'browser' ? evaluator.optimized : null });
    setStatus(rung ? `${rung} to move…` : 'Your move.', 'ready');
  } catch (error) {
    state.errors.push(String(error.message || error));
    setStatus(`The model could not move: ${error.message || error}`, 'error');
    return;
  } finally {
    if (id === gameId) {
      thinking = false;
      redraw();
      if (state.modelMoves.length) {
        mark('shown');
        optimize();
      }
    }
  }
  if (rung) await opponentMove();
}

/**
 * Once the first model move is on the board: a second session over the same
 * bytes with ONNX Runtime's graph optimisations (net.js: slower to start,
 * faster once warm), self-checked on the golden positions exactly as the
 * first. The search uses it from the next move on if it passes, and keeps the
 * first (checked) session otherwise; czState.optimized says which. The first
 * session stays allocated: a search of an abandoned game may still use it.
 */
function optimize() {
  optimizing ??= (async () => {
    try {
      const faster = await loadNet(checked.bytes, { optimized: true });
      const check = await checkNetwork(checked.encoded, faster, checked.bytes);
      state.optimized = { ok: check.ok, checked: check.checked, failures: check.failures };
      if (check.ok) net = faster;
    } catch (error) {
      state.optimized = { ok: false, checked: 0, failures: [String(error.message || error)] };
    }
    $('check').textContent += state.optimized.ok
      ? ' The optimised session passed it too and plays from now on.'
      : ' The optimised session did not pass it: the page keeps the unoptimised one.';
  })();
}

async function opponentMove() {
  if (!rung || game.termination() !== null || game.chess.turn() !== human) return;
  const id = gameId;
  try {
    const response = await fetch('/api/opponent', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ rung, start_fen: game.startFen, moves: game.moves.map(uciOf) }),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `server answered ${response.status}`);
    if (id !== gameId) return;
    const move = game.legalMoves().find((m) => uciOf(m) === body.move);
    if (!move) throw new Error(`its move ${body.move} is not legal here`);
    const made = game.push(move);
    state.opponentMoves.push({ uci: uciOf(made), rung });
  } catch (error) {
    state.errors.push(String(error.message || error));
    setStatus(`${rung} could not move: ${error.message || error}`, 'error');
    return;
  }
  redraw();
  await modelMove();
}

function onHumanMove(orig, dest) {
  const piece = $('promotion').value; // the piece a pawn reaching the last rank becomes
  const move = game.legalMoves().find((m) => m.from === orig && m.to === dest && (!m.promotion || m.promotion === piece));
  if (!move) {
    redraw();
    return;
  }
  game.push(move);
  redraw();
  modelMove();
}

/** A new game from the start position field (empty: the initial position). A refused FEN sets
 *  startError and gives the initial position, on which nothing is played until a new game. */
function startGame() {
  const fen = $('start-fen').value.trim();
  startError = null;
  try {
    game = new GameRecord(fen || undefined);
  } catch (error) {
    startError = `Start position refused: "${fen}" is not a valid FEN (${error.message || error}).`;
    game = new GameRecord();
  }
  state.startFen = startError === null ? game.startFen : null;
}

function newGame() {
  gameId++;
  thinking = false;
  startGame();
  human = $('side').value;
  rung = $('opponent').value;
  redraw();
  $('pgn').value = '';
  if (state.selfCheck === 'passed') play();
}

/** Starts the game's moves: the model's, or the rung's when it has White. */
function play() {
  if (startError !== null) {
    state.errors.push(startError);
    setStatus(startError, 'error');
    return;
  }
  if (game.termination() !== null) return; // a start position that is already over: redraw said so
  setStatus(game.chess.turn() === human && !rung ? 'Your move.' : '', 'ready');
  if (rung && game.chess.turn() === human) opponentMove();
  else modelMove();
}

function exportPgn() {
  const pgn = new GameRecord(game.startFen).chess; // SetUp and FEN headers when not the initial position
  const model = info ? `chesszero ${info.label}` : 'chesszero';
  const other = rung || 'Human';
  pgn.header('Event', 'chesszero web', 'White', human === 'w' ? other : model, 'Black', human === 'b' ? other : model,
    'Result', resultText());
  for (const m of game.moves) pgn.move({ from: m.from, to: m.to, promotion: m.promotion });
  const text = `${pgn.pgn()}${game.termination() === null ? ' *' : ''}\n`;
  $('pgn').value = text;
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([text], { type: 'application/x-chess-pgn' }));
  link.download = 'chesszero.pgn';
  link.click();
}

function refuse(failures) {
  state.selfCheck = 'failed';
  state.failures = failures;
  setStatus('Encoding self-check FAILED: this page will not play, because its encoding or runtime does not reproduce '
    + 'the values published with the model.', 'error');
  board.redrawAll();
  const list = $('failures');
  for (const f of failures.slice(0, 12)) {
    const item = document.createElement('li');
    item.textContent = f;
    list.append(item);
  }
  if (failures.length > 12) list.append(`… and ${failures.length - 12} more`);
  redraw();
}

async function start() {
  $('visits').value = params.get('visits') || '64';
  $('mode').value = params.get('mode') === 'server' ? 'server' : 'browser';
  $('side').value = human;
  $('start-fen').value = params.get('fen') || '';
  startGame();
  board = Chessground($('board'), {
    movable: { free: false, showDests: true, events: { after: onHumanMove } },
    premovable: { enabled: false },
    highlight: { lastMove: true, check: true },
  });
  redraw();
  $('new-game').addEventListener('click', newGame);
  $('export-pgn').addEventListener('click', exportPgn);
  try {
    setStatus('Loading the model…', 'busy');
    // At once (ONNX Runtime is already starting): the model's download and session, the golden
    // positions' re-encoding as soon as their file is there, and the model's description.
    const session = fetch('/model.onnx').then(async (response) => {
      if (!response.ok) throw new Error(`no model (${response.status})`);
      const bytes = await response.arrayBuffer();
      mark('fetched');
      const loaded = await loadNet(bytes);
      mark('session');
      return { bytes, loaded };
    });
    const encoding = fetch('/golden.json').then(async (response) => {
      if (!response.ok) throw new Error(`no golden file (${response.status})`);
      const golden = await response.json();
      mark('golden');
      const encoded = await encodeGolden(golden);
      mark('encoded');
      return encoded;
    });
    for (const later of [session, encoding]) later.catch(() => {}); // awaited below; a failure is reported there
    info = await (await fetch('/api/info')).json();
    for (const { name, rating } of info.opponents) {
      const option = document.createElement('option');
      option.value = name;
      option.textContent = rating === null ? name : `${name} (${Math.round(rating)} Elo)`;
      $('opponent').append(option);
    }
    $('opponent').value = rung;
    $('model').textContent = info.label;
    $('model-detail').textContent = info.detail;
    setStatus('Checking the encoding against the golden file…', 'busy');
    const encoded = await encoding;
    const { golden } = encoded;
    const { bytes, loaded } = await session;
    net = loaded;
    checked = { encoded, bytes };
    const check = await checkNetwork(encoded, net, bytes);
    state.check = check;
    mark('checked');
    if (!check.ok) {
      refuse(check.failures);
      return;
    }
    state.selfCheck = 'passed';
    board.redrawAll(); // the header above the board has grown: chessground must measure it again
    $('check').textContent = `Self-check passed: ${check.checked} positions, planes and legal moves identical, `
      + `max policy difference ${check.worst.policy.toExponential(1)}, max WDL difference ${check.worst.wdl.toExponential(1)} `
      + `(tolerance ${golden.tolerance.policy}/${golden.tolerance.wdl}, ${golden.precision}).`;
    redraw();
    play();
  } catch (error) {
    refuse([`the page could not load or check the model: ${error.message || error}`]);
  }
}

start();
