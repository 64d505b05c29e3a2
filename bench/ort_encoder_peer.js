// ort_encoder_peer.js - the ONNX Runtime peer of bench/compare_encoders.py:
// runs an encoder exported by export_onnx_encoder.py (CPU, 2 intra-op
// threads, all graph optimizations) and prints one JSON line with the best
// seconds per call over the repetitions (after one warm-up call).
//
//   node ort_encoder_peer.js MODEL.onnx --lengths 12,40,7 --reps 5
//       a batch of sequences padded to the longest, with an attention mask
//       (--output FILE: the first output of one more run, raw f32)
//   node ort_encoder_peer.js MODEL.onnx --images 1 --reps 5
//       224x224 images
//   node ort_encoder_peer.js MODEL.onnx --samples 480000 --reps 3
//       a speech model's mono samples (input_values [1, samples])
//   node ort_encoder_peer.js MODEL.onnx --values 1,1024,128 --reps 3
//       input_values of that shape (an audio classifier's filterbank)
const ort = require('onnxruntime-node');

function argument(name) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

function inputs() {
  const samples = argument('--samples'), shape = argument('--values');
  if (samples !== undefined || shape !== undefined) {
    const dims = shape !== undefined ? shape.split(',').map(Number)
                                     : [1, Number(samples)];
    const n = dims.reduce((a, b) => a * b, 1);
    const values = Float32Array.from({length: n}, (_, i) => ((i * 7919) % 65536) / 65536 - 0.5);
    return {input_values: new ort.Tensor('float32', values, dims)};
  }
  const images = argument('--images');
  if (images !== undefined) {
    const n = Number(images), size = n * 3 * 224 * 224;
    const pixels = Float32Array.from({length: size}, (_, i) => (i % 251) / 251);
    return {pixel_values: new ort.Tensor('float32', pixels, [n, 3, 224, 224])};
  }
  const lengths = argument('--lengths').split(',').map(Number);
  const longest = Math.max(...lengths), batch = lengths.length;
  const ids = new BigInt64Array(batch * longest);
  const mask = new BigInt64Array(batch * longest);
  lengths.forEach((n, b) => {
    for (let i = 0; i < n; ++i) {
      ids[b * longest + i] = BigInt(1000 + i);
      mask[b * longest + i] = 1n;
    }
  });
  return {input_ids: new ort.Tensor('int64', ids, [batch, longest]),
          attention_mask: new ort.Tensor('int64', mask, [batch, longest])};
}

async function main() {
  const session = await ort.InferenceSession.create(process.argv[2], {
    executionProviders: ['cpu'], intraOpNumThreads: 2, interOpNumThreads: 1,
    graphOptimizationLevel: 'all'});
  const feeds = inputs(), reps = Number(argument('--reps') || 5);
  await session.run(feeds); // warm up
  let best = Infinity;
  for (let r = 0; r < reps; ++r) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  }
  const output = argument('--output');
  if (output !== undefined) {
    const results = await session.run(feeds);
    const hidden = results[session.outputNames[0]].data;
    require('fs').writeFileSync(output, Buffer.from(hidden.buffer, hidden.byteOffset,
                                                    hidden.byteLength));
  }
  console.log(JSON.stringify({best_seconds: best}));
}

main().catch((e) => { console.error(e); process.exit(1); });
