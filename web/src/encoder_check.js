// Node command behind tests/test_web_encoder.py: reads one JSON game per line
// from stdin ({"start_fen", "moves", "plies": [k, ...], "full": bool}) and,
// for every listed ply k (the position after the first k moves), writes one
// JSON line: {"ply", "sha256" of the planes, "legal" action ids, and with
// "full" the planes themselves}. Built into build/encoder-check.mjs by build.mjs.

import { createInterface } from 'node:readline';
import { encode, GameRecord, planesSha256 } from './encoding.js';

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
const planes = new Float32Array(52 * 64);
for await (const line of lines) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  const wanted = new Set(request.plies);
  const game = new GameRecord(request.start_fen);
  const report = async () => {
    encode(game, planes);
    const row = { ply: game.ply, sha256: await planesSha256(planes), legal: game.legalActions() };
    if (request.full) row.planes = Array.from(planes);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  };
  if (wanted.has(0)) await report();
  for (const uci of request.moves) {
    game.pushUci(uci);
    if (wanted.has(game.ply)) await report();
  }
}
