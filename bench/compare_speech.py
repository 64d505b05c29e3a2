#!/usr/bin/env python3
"""bench/compare_speech.py: speech models with random weights, tfmc against
PyTorch and ONNX Runtime, beside the machine's FP32 peak measured in the
same run:

- wav2vec2 (default): a wav2vec2-base-shaped recognizer (Wav2Vec2ForCTC
  with transformers' Wav2Vec2Config defaults: seven convolutions of 512
  channels, 12 layers 768 wide, 32 labels) on 30 s of 16 kHz audio;
- ast: an AST-base-shaped classifier (ASTForAudioClassification with
  ASTConfig defaults: 128 mel bins x 1024 frames, 10.24 s, in 16x16
  patches every 10; 12 layers 768 wide; AudioSet's 527 labels) on one
  clip's filterbank (the feature extraction is not timed in any of the
  three).

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 bench/compare_speech.py [--model ast] [--seconds 30] [--reps 3] [--no-ort]

tfmc: the model compiled with --emit=staticlib and timed through
tfm_model_call on @recognize or @classify (bench/features_bench.c). PyTorch:
the model's forward (OPENBLAS_NUM_THREADS=2, torch.set_num_threads(2), no
grad). ONNX Runtime: onnxruntime-node on the model exported with
torch.onnx (CPU, 2 intra-op threads, all graph optimizations;
bench/ort_encoder_peer.js). Printed: seconds per clip, the real-time
factor (seconds of compute per second of audio), the ratios, and tfmc's
GFLOP/s as a fraction of the peak. Best of the repetitions.
"""
import argparse
import json
import os
import subprocess
import sys

from compare_peers import (add_compute_dtype, datapath_peak, hardware_limits,
                           peer_onnx, torch_quantization,
                           link_model_bench, ort_unavailable,
                           torch_best_seconds)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VOCAB = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4,
         **{c: 5 + i for i, c in enumerate("ETAONIHSRDLUMWCFGYPBVK'XJQZ")}}


def make_ast(directory):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return
    torch.manual_seed(0)
    labels = {i: f"class {i}" for i in range(527)}
    model = tf.ASTForAudioClassification(tf.ASTConfig(
        architectures=["ASTForAudioClassification"], id2label=labels)).eval()
    model.save_pretrained(directory, safe_serialization=True)
    tf.ASTFeatureExtractor().save_pretrained(directory)


def ast_flops():
    """The patch embedding, 12 blocks over 1,214 tokens, the head."""
    tokens, d = 1214, 768
    total = 2 * 1212 * 256 * d
    total += 12 * 2 * tokens * (4 * d * d + 2 * d * 3072)
    total += 12 * 4 * tokens * tokens * d
    return total + 2 * d * 527


def make_model(directory):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return
    torch.manual_seed(0)
    model = tf.Wav2Vec2ForCTC(
        tf.Wav2Vec2Config(architectures=["Wav2Vec2ForCTC"])).eval()
    model.save_pretrained(directory, safe_serialization=True)
    tf.Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16000, padding_value=0.0,
        do_normalize=True, return_attention_mask=False).save_pretrained(directory)
    with open(os.path.join(directory, "vocab.json"), "w") as f:
        json.dump(VOCAB, f)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"pad_token": "<pad>", "word_delimiter_token": "|"}, f)


def flops(samples):
    """Multiply-adds x 2 of the convolutions, the positional convolution,
    the blocks and the head."""
    kernels, strides = [10, 3, 3, 3, 3, 2, 2], [5, 2, 2, 2, 2, 2, 2]
    total, length, channels = 0, samples, 1
    for k, s in zip(kernels, strides):
        length = (length - k) // s + 1
        total += 2 * length * channels * k * 512
        channels = 512
    d, frames = 768, length
    total += 2 * frames * 512 * d                     # feature projection
    total += 2 * frames * (d // 16) * 128 * d          # positional, 16 groups
    total += 12 * 2 * frames * (4 * d * d + 2 * d * 3072)
    total += 12 * 4 * frames * frames * d              # scores and values
    total += 2 * frames * d * 32
    return total


def torch_peer(directory, samples, reps, dtype, ast=False):
    model_class = "ASTForAudioClassification" if ast else "Wav2Vec2ForCTC"
    shape = "1, 1024, 128" if ast else f"1, {samples}"
    return torch_best_seconds(
        f"model = tf.{model_class}.from_pretrained({directory!r}).eval()\n"
        f"{torch_quantization(dtype)}\n"
        f"x = torch.rand({shape}) - 0.5", "model(x)", reps)


def export_onnx(directory, onnx, ast=False):
    if ast:
        code = f"""
import torch, transformers as tf
model = tf.ASTForAudioClassification.from_pretrained({directory!r}).eval()
torch.onnx.export(model, (torch.rand(1, 1024, 128),), {onnx!r},
                  input_names=["input_values"], output_names=["logits"],
                  opset_version=14)
"""
    else:
        code = f"""
import torch, transformers as tf
model = tf.Wav2Vec2ForCTC.from_pretrained({directory!r}).eval()
torch.onnx.export(model, (torch.rand(1, 16000),), {onnx!r},
                  input_names=["input_values"], output_names=["logits"],
                  dynamic_axes={{"input_values": {{1: "samples"}},
                                "logits": {{1: "frames"}}}}, opset_version=14)
"""
    subprocess.run([sys.executable, "-c", code], check=True,
                   capture_output=True)


def ort_peer(directory, samples, reps, dtype, ast=False):
    onnx = directory + ".onnx"
    if not os.path.exists(onnx):
        export_onnx(directory, onnx, ast)
    shape = ["--values", "1,1024,128"] if ast else ["--samples", str(samples)]
    out = subprocess.run(["node", os.path.join(HERE, "ort_encoder_peer.js"),
                          peer_onnx(onnx, dtype)] + shape + ["--reps", str(reps)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["best_seconds"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--model", choices=["wav2vec2", "ast"],
                        default="wav2vec2")
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-ort", action="store_true")
    add_compute_dtype(parser)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    datapath, peak = datapath_peak(hardware_limits(args.work),
                                   args.compute_dtype)
    print(f"machine: {datapath} peak {peak:.1f} GFLOP/s (tfmc "
          f"--compute-dtype {args.compute_dtype})")
    ast = args.model == "ast"
    # AST hears a fixed 1,024 frames: 10.24 s.
    seconds = 10.24 if ast else (args.seconds or 30)
    name = "ast-base" if ast else "wav2vec2-base"
    model = os.path.join(args.work, name + "-random")
    (make_ast if ast else make_model)(model)
    exe = link_model_bench(args.work, model, "features_bench.c",
                           name + "-" + args.compute_dtype,
                           ["--compute-dtype", args.compute_dtype])
    samples = int(seconds * 16000)
    ours = json.loads(subprocess.run([exe, str(seconds), str(args.reps)],
                                     capture_output=True, text=True,
                                     check=True).stdout)["seconds"]
    theirs = torch_peer(model, samples, args.reps, args.compute_dtype, ast)
    onnx = (None if ort_unavailable(not args.no_ort)
            else ort_peer(model, samples, args.reps, args.compute_dtype, ast))
    gflops = (ast_flops() if ast else flops(samples)) / ours / 1e9
    print(f"{'clip':>8} {'tfmc s':>7} {'RTF':>6} {'PyTorch s':>10} {'/PT':>6} "
          f"{'ORT s':>6} {'/ORT':>6}  tfmc of the {datapath} peak")
    print(f"{seconds:>7.2f}s {ours:>7.2f} {ours / seconds:>6.3f} "
          f"{theirs:>10.2f} {theirs / ours:>5.2f}x "
          f"{'-' if onnx is None else f'{onnx:.2f}':>6} "
          f"{'-' if onnx is None else f'{onnx / ours:.2f}x':>6}  "
          f"{gflops:.0f} GFLOP/s = {100 * gflops / peak:.0f}%")


if __name__ == "__main__":
    main()
