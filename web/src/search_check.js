// Node command behind tests/test_web_search.py: reads one JSON request per
// line ({"start_fen", "moves", "visits"}) and runs the page's search with a
// uniform network (equal logits, an even WDL), writing one JSON line each:
// {"best", "visits", "moves": [{uci, visits}...]}. Built into
// build/search-check.mjs by build.mjs.

import { createInterface } from 'node:readline';
import { GameRecord, NUM_ACTIONS, uciOf } from './encoding.js';
import { search } from './search.js';

const uniform = {
  async evaluate(planes, n) {
    return { logits: new Float32Array(n * NUM_ACTIONS), wdl: new Float32Array(n * 3).fill(1 / 3) };
  },
};

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  const game = GameRecord.fromUci(request.start_fen, request.moves || []);
  const result = await search(game, uniform, request.visits);
  const row = { best: uciOf(result.best), visits: result.visits, moves: result.moves.map(({ uci, visits }) => ({ uci, visits })) };
  process.stdout.write(`${JSON.stringify(row)}\n`);
}
