// Builds the page into ../src/chesszero/web/static/dist (served by `chesszero web`,
// shipped in the wheel) and the encoder and search checks into build/ (for the test suite).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';

const dist = '../src/chesszero/web/static/dist';
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: { app: 'src/main.js' },
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: false,
  outdir: dist,
  logLevel: 'warning',
});
// ONNX Runtime's WebAssembly backend (single-threaded SIMD build) beside the bundle.
for (const file of ['ort-wasm-simd-threaded.wasm', 'ort-wasm-simd-threaded.mjs']) {
  copyFileSync(`node_modules/onnxruntime-web/dist/${file}`, `${dist}/${file}`);
}
// Node commands for the test suite: the encoder and the search, as the page runs them.
for (const name of ['encoder', 'search']) {
  await build({
    entryPoints: [`src/${name}_check.js`],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node18',
    outfile: `build/${name}-check.mjs`,
    logLevel: 'warning',
  });
}
