// The encoding self-check: before the page plays, it re-encodes the golden
// positions that publication exported beside the artifact
// (chesszero.publish.golden), runs them through the network in this browser
// and compares plane hashes, legal action ids, the policy's top moves and the
// WDL with the Python side's values. Any disagreement beyond the file's
// tolerance is a failure with a message naming the position and the value.

import { actionOf, encode, GameRecord, NUM_ACTIONS, NUM_PLANES, planesSha256, sha256Hex } from './encoding.js';
import { priors } from './search.js';

export const GOLDEN_FORMAT = 1;

/**
 * First half, pure JavaScript (it can run while the runtime compiles): replay
 * the golden positions, compare plane hashes and legal ids, and keep the
 * planes for the network. Returns {golden, games, batch, failures, comparable}.
 */
export async function encodeGolden(golden) {
  const failures = [];
  if (golden.format !== GOLDEN_FORMAT) failures.push(`golden file format ${golden.format}, this page reads ${GOLDEN_FORMAT}`);
  const tol = golden.tolerance || {};
  if (!(tol.policy >= 0) || !(tol.wdl >= 0)) failures.push('the golden file has no tolerance');
  const positions = golden.positions || [];
  if (positions.length === 0) failures.push('the golden file has no positions');
  const comparable = failures.length === 0; // the file's structure is readable: compare every value
  const batch = new Float32Array(positions.length * NUM_PLANES * 64);
  const games = [];
  const problems = positions.map(() => []); // per position, so that the failures keep the file's order
  const hashed = [];
  for (const [i, p] of positions.entries()) {
    let game;
    try {
      game = GameRecord.fromUci(p.start_fen, p.moves);
    } catch (error) {
      problems[i].push(`${p.id}: ${error.message}`);
      games.push(null);
      continue;
    }
    games.push(game);
    const planes = encode(game, batch.subarray(i * NUM_PLANES * 64, (i + 1) * NUM_PLANES * 64));
    // The hashes are computed together, after the encoding: one await for all of them.
    hashed.push(planesSha256(planes).then((sha) => {
      if (sha !== p.planes_sha256) problems[i].unshift(`${p.id}: the input planes differ from the Python encoding`);
    }));
    const legal = game.legalActions();
    if (legal.join(',') !== (p.legal || []).join(',')) problems[i].push(`${p.id}: legal action ids differ (${legal.length} here, ${(p.legal || []).length} golden)`);
  }
  await Promise.all(hashed);
  failures.push(...problems.flat());
  return { golden, games, batch, failures, comparable };
}

/**
 * Second half: the model's bytes against the golden file's hash, and the
 * network's outputs on the golden positions against the golden values.
 * Returns {ok, failures: [text], checked, worst: {policy, wdl}}.
 */
export async function checkNetwork(encoded, net, modelBytes) {
  const { golden, games, batch } = encoded;
  const failures = [...encoded.failures];
  const worst = { policy: 0, wdl: 0 };
  const sha = await sha256Hex(modelBytes);
  if (sha !== golden.artifact_sha256) failures.push(`the model's SHA-256 ${sha.slice(0, 12)}… is not the golden file's ${String(golden.artifact_sha256).slice(0, 12)}…`);
  if (!encoded.comparable) return { ok: false, failures, checked: 0, worst };
  const positions = golden.positions;
  const tol = golden.tolerance;
  const { logits, wdl } = await net.evaluate(batch, positions.length);
  for (const [i, p] of positions.entries()) {
    if (games[i] === null) continue;
    const white = games[i].white;
    const byAction = new Map(priors(games[i], logits, i * NUM_ACTIONS).map(({ move, prior }) => [actionOf(move, white), prior]));
    for (const [action, prob] of p.top) {
      const diff = Math.abs((byAction.get(action) ?? 0) - prob);
      worst.policy = Math.max(worst.policy, diff);
      if (diff > tol.policy) failures.push(`${p.id}: policy of action ${action} is ${(byAction.get(action) ?? 0).toFixed(4)} here, ${prob.toFixed(4)} golden`);
    }
    for (let k = 0; k < 3; k++) {
      const diff = Math.abs(wdl[i * 3 + k] - p.wdl[k]);
      worst.wdl = Math.max(worst.wdl, diff);
      if (diff > tol.wdl) failures.push(`${p.id}: ${'WDL'[k]} is ${wdl[i * 3 + k].toFixed(4)} here, ${p.wdl[k].toFixed(4)} golden`);
    }
  }
  return { ok: failures.length === 0, failures, checked: positions.length, worst };
}
