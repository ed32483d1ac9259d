// The published ONNX artifact in the browser: ONNX Runtime Web, WebAssembly
// backend, one thread (the page must not need cross-origin isolation).

import * as ort from 'onnxruntime-web/wasm';

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL('./', import.meta.url).href; // the .wasm sits beside the bundle

// An ONNX model whose graph is one Identity node (input x, output y, float[1];
// IR 8, opset 13), as onnx.helper writes it: 67 bytes.
const IDENTITY_ONNX = 'CAgSADo3ChAKAXgSAXkiCElkZW50aXR5EgF3Wg8KAXgSCgoICAESBAoCCAFiDwoBeRIKCggIARIECgIIAUIECgAQDQ==';

let runtime = null;

/**
 * Starts ONNX Runtime (instantiating its 14 MB WebAssembly and initialising
 * the runtime, the work that the first session created does) without waiting
 * for the artifact: a session over the tiny model above. Called as the page's
 * script starts, so that this runs while the artifact and the golden file
 * download; loadNet waits for it.
 */
export function startRuntime() {
  runtime ??= ort.InferenceSession.create(Uint8Array.from(atob(IDENTITY_ONNX), (c) => c.charCodeAt(0)),
    { executionProviders: ['wasm'] }).then((session) => session.release());
  return runtime;
}

/**
 * An evaluator over the artifact's bytes: evaluate(planes, n) -> {logits, wdl}
 * (flat arrays). By default the session runs the artifact's graph as it is
 * (graph optimisations disabled): in a freshly opened page that is the
 * quickest way to the first evaluations, because ONNX Runtime's optimisers
 * (fusing the quantize/dequantize pairs into INT8 kernels) are a lot of
 * WebAssembly to compile and tier up first (measured with the 6x64 network
 * on the loaded 2-core machine: 0.6 s more of the renderer's CPU, and the
 * first model move 0.7 s later). With `optimized`, all of them: about
 * 1.7 times as fast per evaluation once the code is warm (6x64: 1.9 against
 * 3.2 ms), which the page switches to after its first move (main.js).
 */
export async function loadNet(bytes, { optimized = false } = {}) {
  await startRuntime();
  const session = await ort.InferenceSession.create(new Uint8Array(bytes),
    { executionProviders: ['wasm'], graphOptimizationLevel: optimized ? 'all' : 'disabled' });
  return {
    optimized,
    async evaluate(planes, n) {
      const input = new ort.Tensor('float32', planes, [n, 52, 8, 8]);
      const out = await session.run({ planes: input });
      return { logits: out.policy_logits.data, wdl: out.wdl.data };
    },
  };
}
