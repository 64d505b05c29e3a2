#!/usr/bin/env python3
"""bench/compare_seq2seq.py: encoder-decoders generating, tfmc against
transformers on PyTorch and ONNX Runtime, side by side in one run:

- a Marian-shaped translation model (MarianMTModel: 6 + 6 layers, 512
  wide, 8 heads, FFN 2048, vocab 58101; random weights, the end-of-sequence
  token's logit bias at -1e4 so that every run generates NEW tokens)
  translating a SOURCE-token input: tokens/s at beam 1 (greedy) and beam 4
  (tokens of the output sequence per second);
- a Whisper-base-shaped speech model (WhisperForConditionalGeneration: 6 +
  6 layers, 512 wide, 8 heads, FFN 2048, 80 mel bins, 1500 encoder
  positions, vocab 51865; random weights) transcribing 30 s of audio
  features: the prompt (language, task, no timestamps) and WHISPER_NEW
  tokens greedily; real-time factor = seconds / 30 (lower is better).

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 bench/compare_seq2seq.py [--source 64] [--new 64]
        [--whisper-new 96] [--reps 3] [--no-ort] [--no-whisper]

tfmc: compiled with --emit=staticlib, linked into bench/seq2seq_bench.c,
tfm_seq2seq_generate_from / tfm_seq2seq_beam_search_from. PyTorch:
generate() (eager attention, no grad) at its fastest setting here
(OPENBLAS_NUM_THREADS=2, torch.set_num_threads(1)). ONNX Runtime:
onnxruntime-node on the encoder and decoder-with-past exported by
export_onnx_seq2seq.py, driven by ort_seq2seq_peer.js (2 intra-op
threads). Every figure is the best of the repetitions; the machine's FP32
peak and read bandwidth are measured in the same run (decoding one token
reads every decoder weight: bandwidth is its limit).
"""
import argparse
import json
import os
import subprocess
import sys

from compare_peers import (hardware_limits, link_model_bench,
                           ort_unavailable, read_bandwidth)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WHISPER_PROMPT = [50259, 50359, 50363]  # <|en|> <|transcribe|> <|notimestamps|>


def make_model(directory, whisper):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return
    torch.manual_seed(0)
    if whisper:
        config = tf.WhisperConfig(
            vocab_size=51865, num_mel_bins=80, encoder_layers=6,
            decoder_layers=6, encoder_attention_heads=8,
            decoder_attention_heads=8, d_model=512, encoder_ffn_dim=2048,
            decoder_ffn_dim=2048, max_source_positions=1500,
            max_target_positions=448)
        model = tf.WhisperForConditionalGeneration(config).eval()
        model.generation_config.forced_decoder_ids = [
            [i + 1, t] for i, t in enumerate(WHISPER_PROMPT)]
        model.generation_config.suppress_tokens = None
        model.generation_config.begin_suppress_tokens = None
        model.save_pretrained(directory, safe_serialization=True)
        tf.WhisperFeatureExtractor().save_pretrained(directory)
        return
    config = tf.MarianConfig(
        vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
        encoder_attention_heads=8, decoder_attention_heads=8,
        encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512,
        pad_token_id=58100, decoder_start_token_id=58100, eos_token_id=0)
    model = tf.MarianMTModel(config).eval()
    with torch.no_grad():
        model.final_logits_bias[0, 0] = -1e4
    model.save_pretrained(directory, safe_serialization=True)


def compile_bench(work, name, whisper):
    model = os.path.join(work, name)
    make_model(model, whisper)
    return model, link_model_bench(work, model, "seq2seq_bench.c", name)


def tfmc_seconds(exe, source, new, beams, reps):
    out = subprocess.run([exe, str(source), str(new), str(beams), str(reps)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def torch_seconds(directory, whisper, source, new, beams, reps):
    prepare = (f"""
features = torch.tensor([(i % 150) * 0.01 - 0.5 for i in range(80 * 3000)]).reshape(1, 80, 3000)
run = lambda: tf.GenerationMixin.generate(model, features, decoder_input_ids=torch.tensor([[config.decoder_start_token_id] + {WHISPER_PROMPT!r}]), forced_decoder_ids=None, suppress_tokens=[config.eos_token_id], begin_suppress_tokens=None, do_sample=False, num_beams={beams}, max_new_tokens={new})
""" if whisper else f"""
ids = torch.arange(1000, 1000 + {source}).unsqueeze(0); ids[0, -1] = config.eos_token_id
run = lambda: model.generate(ids, do_sample=False, num_beams={beams}, max_new_tokens={new}, min_new_tokens={new}, length_penalty=1.0, early_stopping=False)
""")
    cls = "WhisperForConditionalGeneration" if whisper else "MarianMTModel"
    code = f"""
import json, time, torch, transformers as tf
torch.set_num_threads(1)
config = tf.AutoConfig.from_pretrained({directory!r})
config._attn_implementation = "eager"
model = tf.{cls}.from_pretrained({directory!r}, config=config).eval()
{prepare}
times = []
with torch.no_grad():
    for r in range({reps} + 1):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
print(json.dumps({{"best_seconds": min(times[1:]), "tokens": out.shape[1]}}))
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


class OrtPeer:
    def __init__(self, work, enabled):
        self.work, self.reason = work, ort_unavailable(enabled)

    def seconds(self, directory, whisper, source, new, beams, reps, start):
        if self.reason:
            return None
        prefix = directory + ".onnx"
        if not os.path.exists(prefix + ".decoder-past.onnx"):
            subprocess.run([sys.executable, os.path.join(HERE, "export_onnx_seq2seq.py"),
                            directory, prefix], check=True, capture_output=True)
        what = (["--features", "80x3000", "--prompt",
                 ",".join(map(str, WHISPER_PROMPT))] if whisper else
                ["--source", str(source)])
        out = subprocess.run(["node", os.path.join(HERE, "ort_seq2seq_peer.js"), prefix,
                              "--new", str(new), "--beams", str(beams), "--reps",
                              str(reps), "--start", str(start)] + what,
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])["best_seconds"]


def row(label, ours, torch_seconds, onnx_seconds, show):
    """One cell: each figure as `show` spells it (from seconds), and how
    many times faster tfmc is than each peer."""
    mine = ours["best_seconds"]
    onnx = "-" if onnx_seconds is None else show(onnx_seconds)
    speedup = "-" if onnx_seconds is None else f"{onnx_seconds / mine:.2f}x"
    print(f"{label:>22} {show(mine):>10} {show(torch_seconds):>10} "
          f"{torch_seconds / mine:>5.2f}x {onnx:>10} {speedup:>6}  "
          f"{ours['encode_seconds'] * 1e3:.1f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--source", type=int, default=64)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--whisper-new", type=int, default=96)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-ort", action="store_true")
    parser.add_argument("--no-whisper", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    limits = hardware_limits(args.work)
    print(f"machine: FP32 peak {limits['fp32_peak_gflops']:.1f} GFLOP/s, "
          f"read bandwidth {read_bandwidth(args.work):.1f} GB/s")
    ort = OrtPeer(args.work, not args.no_ort)
    marian, exe = compile_bench(args.work, "marian-base-random", whisper=False)
    print(f"{'cell':>22} {'tfmc':>10} {'PyTorch':>10} {'/PT':>6} {'ORT':>10} "
          f"{'/ORT':>6}  tfmc encode ms")
    for beams in (1, 4):
        ours = tfmc_seconds(exe, args.source, args.new, beams, args.reps)
        theirs = torch_seconds(marian, False, args.source, args.new, beams, args.reps)
        onnx = ort.seconds(marian, False, args.source, args.new, beams, args.reps, 58100)
        row(f"Marian beam {beams} tok/s", ours, theirs["best_seconds"], onnx,
            lambda s: f"{args.new / s:.1f}")
    if args.no_whisper:
        return
    whisper, exe = compile_bench(args.work, "whisper-base-random", whisper=True)
    ours = tfmc_seconds(exe, 0, args.whisper_new, 1, args.reps)
    theirs = torch_seconds(whisper, True, 0, args.whisper_new, 1, args.reps)
    onnx = ort.seconds(whisper, True, 0, args.whisper_new, 1, args.reps, 50258)
    row("Whisper RTF (30 s)", ours, theirs["best_seconds"], onnx,
        lambda s: f"{s / 30.0:.4f}")


if __name__ == "__main__":
    main()
