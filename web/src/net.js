// The published ONNX artifact in the browser: ONNX Runtime Web, WebAssembly
// backend, one thread (the page must not need cross-origin isolation).

import * as ort from 'onnxruntime-web/wasm';

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL('./', import.meta.url).href; // the .wasm sits beside the bundle

/** An evaluator over the artifact's bytes: evaluate(planes, n) -> {logits, wdl} (flat arrays). */
export async function loadNet(bytes) {
  const session = await ort.InferenceSession.create(new Uint8Array(bytes), { executionProviders: ['wasm'] });
  return {
    async evaluate(planes, n) {
      const input = new ort.Tensor('float32', planes, [n, 52, 8, 8]);
      const out = await session.run({ planes: input });
      return { logits: out.policy_logits.data, wdl: out.wdl.data };
    },
  };
}
