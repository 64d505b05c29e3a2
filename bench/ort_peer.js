// ort_peer.js - the ONNX Runtime peer of bench/compare_peers.py: runs a model
// exported by export_onnx.py (CPU, 2 intra-op threads) and prints one JSON
// line: prefill tokens/s for the prompt, decode tokens/s over the new
// tokens (greedy, feeding present key/values back as past), peak RSS.
//
//   node ort_peer.js MODEL.onnx LAYERS KV_HEADS HEAD_DIM VOCAB --prompt 128 --new 64
const ort = require('onnxruntime-node');

function argument(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

async function main() {
  const [path, layers, kvHeads, headDim, vocab] = process.argv.slice(2, 7);
  const L = Number(layers), H = Number(kvHeads), D = Number(headDim);
  const promptLength = argument('--prompt', 128), newTokens = argument('--new', 64);
  const session = await ort.InferenceSession.create(path, {
    executionProviders: ['cpu'], intraOpNumThreads: 2, interOpNumThreads: 1,
    graphOptimizationLevel: 'all'});
  // The same random prompt rule as the other peers is not needed: timing
  // does not depend on the ids.
  const ids = BigInt64Array.from({length: promptLength},
                                 (_, i) => BigInt((i * 7919) % Number(vocab)));
  const empty = new ort.Tensor('float32', new Float32Array(0), [L, 0, H, D]);
  const run = (tokens, keys, values) => session.run({
    input_ids: new ort.Tensor('int64', tokens, [tokens.length]),
    past_keys: keys, past_values: values});
  await run(ids.slice(0, 8), empty, empty); // warm up
  let start = process.hrtime.bigint();
  let out = await run(ids, empty, empty);
  const prefill = Number(process.hrtime.bigint() - start) / 1e9;
  start = process.hrtime.bigint();
  for (let i = 0; i < newTokens; ++i) {
    const logits = out.logits.data;
    let best = 0;
    for (let v = 1; v < logits.length; ++v) if (logits[v] > logits[best]) best = v;
    out = await run(BigInt64Array.of(BigInt(best)), out.present_keys, out.present_values);
  }
  const decode = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({
    prefill_tokens_per_s: promptLength / prefill,
    decode_tokens_per_s: newTokens / decode,
    peak_rss_bytes: process.resourceUsage().maxRSS * 1024}));
}

main().catch((e) => { console.error(e); process.exit(1); });
