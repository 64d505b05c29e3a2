// ort_seq2seq_peer.js - the ONNX Runtime peer of bench/compare_seq2seq.py:
// generates NEW tokens with an encoder-decoder exported by
// export_onnx_seq2seq.py (CPU, 2 intra-op threads, all graph
// optimizations): the encoder once, the first decoder step without a past,
// then one step at a time with the self-attention K/V fed back. A beam
// search runs the beams as the batch, keeps the best BEAMS of BEAMS x vocab
// continuations by summed log-probability each step and reorders the self
// K/V to follow them (as optimum with transformers' generate does; no
// end-of-sequence handling, the benchmark's models never end). Prints one
// JSON line: the best seconds per generation after one warm-up run.
//
//   node ort_seq2seq_peer.js PREFIX --source 64 --new 64 --beams 4 --reps 3
//       [--features 80x3000] [--prompt 50259,50359,50363] --start ID
const ort = require('onnxruntime-node');

function argument(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
}

const options = {executionProviders: ['cpu'], intraOpNumThreads: 2,
                 interOpNumThreads: 1, graphOptimizationLevel: 'all'};

function sourceFeed() {
  const features = argument('--features');
  if (features) {
    const [mels, frames] = features.split('x').map(Number);
    const data = Float32Array.from({length: mels * frames},
                                   (_, i) => (i % 150) * 0.01 - 0.5);
    return {input_features: new ort.Tensor('float32', data, [1, mels, frames])};
  }
  const n = Number(argument('--source', 64));
  const ids = BigInt64Array.from({length: n}, (_, i) => BigInt(1000 + i));
  return {input_ids: new ort.Tensor('int64', ids, [1, n])};
}

// The batch rows `rows` of `tensor` (first axis), as a new tensor.
function gatherRows(tensor, rows) {
  const [batch, ...rest] = tensor.dims;
  const size = rest.reduce((a, b) => a * b, 1);
  const data = new Float32Array(rows.length * size);
  rows.forEach((r, i) => data.set(tensor.data.subarray(r * size, (r + 1) * size), i * size));
  return new ort.Tensor('float32', data, [rows.length, ...rest]);
}

// Log-probabilities of one row of logits.
function logSoftmax(logits, offset, vocab) {
  let max = -Infinity;
  for (let v = 0; v < vocab; ++v) max = Math.max(max, logits[offset + v]);
  let sum = 0;
  for (let v = 0; v < vocab; ++v) sum += Math.exp(logits[offset + v] - max);
  const shift = max + Math.log(sum);
  const out = new Float32Array(vocab);
  for (let v = 0; v < vocab; ++v) out[v] = logits[offset + v] - shift;
  return out;
}

async function generate(sessions, source, steps, beams, prompt, start) {
  const {encoder, init, past} = sessions;
  const hidden1 = (await encoder.run(source)).hidden;
  const rows = Array(beams).fill(0);
  const hidden = gatherRows(hidden1, rows);
  const ids = (tokens) => new ort.Tensor('int64', BigInt64Array.from(tokens.map(BigInt)),
                                         [tokens.length, 1]);
  let out = await init.run({ids: ids(Array(beams).fill(start)), hidden});
  const layers = Object.keys(out).filter((k) => /^k\d+$/.test(k)).length;
  const cross = {};
  for (let i = 0; i < layers; ++i) {
    cross[`cross_k${i}`] = out[`cross_k${i}`];
    cross[`cross_v${i}`] = out[`cross_v${i}`];
  }
  let scores = Float64Array.from({length: beams}, (_, b) => (b ? -1e9 : 0));
  let selfKv = out;
  const vocab = out.logits.dims[2];
  for (let step = 0; step < steps; ++step) {
    let tokens, parents;
    if (step < prompt.length) {
      tokens = Array(beams).fill(prompt[step]);
      parents = [...Array(beams).keys()];
    } else if (beams === 1) {
      let best = 0;
      const l = out.logits.data;
      for (let v = 1; v < vocab; ++v) if (l[v] > l[best]) best = v;
      tokens = [best];
      parents = [0];
    } else {
      const candidates = [];
      for (let b = 0; b < beams; ++b) {
        const lp = logSoftmax(out.logits.data, b * vocab, vocab);
        for (let v = 0; v < vocab; ++v) {
          const s = scores[b] + lp[v];
          if (candidates.length < beams || s > candidates[candidates.length - 1][0]) {
            candidates.push([s, b, v]);
            candidates.sort((x, y) => y[0] - x[0]);
            if (candidates.length > beams) candidates.pop();
          }
        }
      }
      scores = Float64Array.from(candidates.map((c) => c[0]));
      parents = candidates.map((c) => c[1]);
      tokens = candidates.map((c) => c[2]);
    }
    if (step === steps - 1) break;
    const feeds = {ids: ids(tokens), hidden, ...cross};
    for (let i = 0; i < layers; ++i) {
      feeds[`past_k${i}`] = beams > 1 ? gatherRows(selfKv[`k${i}`], parents) : selfKv[`k${i}`];
      feeds[`past_v${i}`] = beams > 1 ? gatherRows(selfKv[`v${i}`], parents) : selfKv[`v${i}`];
    }
    out = await past.run(feeds);
    selfKv = out;
  }
}

async function main() {
  const prefix = process.argv[2];
  const sessions = {
    encoder: await ort.InferenceSession.create(prefix + '.encoder.onnx', options),
    init: await ort.InferenceSession.create(prefix + '.decoder-init.onnx', options),
    past: await ort.InferenceSession.create(prefix + '.decoder-past.onnx', options),
  };
  const steps = Number(argument('--new', 64)), beams = Number(argument('--beams', 1));
  const reps = Number(argument('--reps', 3)), start = Number(argument('--start'));
  const prompt = (argument('--prompt', '') || '').split(',').filter((s) => s).map(Number);
  const source = sourceFeed();
  await generate(sessions, source, steps + prompt.length, beams, prompt, start);
  let best = Infinity;
  for (let r = 0; r < reps; ++r) {
    const t = process.hrtime.bigint();
    await generate(sessions, source, steps + prompt.length, beams, prompt, start);
    best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e9);
  }
  console.log(JSON.stringify({best_seconds: best}));
}

main().catch((e) => { console.error(e); process.exit(1); });
