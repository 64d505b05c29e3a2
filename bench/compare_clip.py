#!/usr/bin/env python3
"""bench/compare_clip.py: a CLIP ViT-B/32-shaped model (transformers'
CLIPConfig defaults: the image tower 12 layers, 768 wide, 224x224 in 32x32
patches; the text tower 12 layers, 512 wide, 77 positions; projections to
512; random weights) embedding one image and one 77-token text (Stable
Diffusion's padded prompt), tfmc against CLIPModel on PyTorch and against
ONNX Runtime, beside the machine's FP32 peak measured in the same run.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 bench/compare_clip.py [--tokens 77] [--reps 10] [--no-ort]

tfmc: the model compiled with --emit=staticlib and timed through
tfm_model_call (bench/clip_bench.c: @embed_image, @embed_text). PyTorch as
compare_encoders.py runs it (OPENBLAS_NUM_THREADS=2,
torch.set_num_threads(1), eager attention, no grad):
get_image_features and get_text_features. ONNX Runtime: onnxruntime-node
on the towers exported by export_onnx_clip.py (CPU, 2 intra-op threads,
all graph optimizations; bench/ort_encoder_peer.js). Printed: ms per image
and per text, embeddings/s, the ratios, and tfmc's GFLOP/s as a fraction
of the peak. Every figure is the best of the repetitions.
"""
import argparse
import json
import os
import subprocess
import sys

from compare_peers import (add_compute_dtype, datapath_peak, hardware_limits,
                           peer_onnx, torch_quantization,
                           link_model_bench, ort_unavailable)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_model(directory):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return
    torch.manual_seed(0)
    model = tf.CLIPModel(tf.CLIPConfig()).eval()
    model.save_pretrained(directory, safe_serialization=True)


def tower_flops(tokens, d, ffn, layers=12):
    matmuls = layers * (4 * d * d + 2 * d * ffn)
    attention = layers * 2 * tokens * tokens * d
    return 2 * (matmuls * tokens + attention)


def image_flops():
    # 49 patches + the class token; the patch GEMM and the projection.
    return (tower_flops(50, 768, 3072) + 2 * 49 * 3 * 32 * 32 * 768
            + 2 * 768 * 512)


def text_flops(tokens):
    return tower_flops(tokens, 512, 2048) + 2 * 512 * 512


def torch_peer(directory, tokens, reps, dtype):
    code = f"""
import json, time, torch, transformers as tf
torch.set_num_threads(1)
config = tf.CLIPConfig.from_pretrained({directory!r})
config._attn_implementation = "eager"
model = tf.CLIPModel.from_pretrained({directory!r}, config=config).eval()
{torch_quantization(dtype)}
pixels = torch.rand(1, 3, 224, 224)
ids = torch.arange(1000, 1000 + {tokens}).unsqueeze(0)
def best(run):
    times = []
    for r in range({reps} + 1):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times[1:])
with torch.no_grad():
    image = best(lambda: model.get_image_features(pixel_values=pixels))
    text = best(lambda: model.get_text_features(input_ids=ids))
print(json.dumps({{"image_seconds": image, "text_seconds": text}}))
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def ort_peer(directory, tokens, reps, dtype):
    image_onnx, text_onnx = directory + ".image.onnx", directory + ".text.onnx"
    if not os.path.exists(text_onnx):
        subprocess.run([sys.executable, os.path.join(HERE, "export_onnx_clip.py"),
                        directory, image_onnx, text_onnx], check=True,
                       capture_output=True)
    peer = os.path.join(HERE, "ort_encoder_peer.js")

    def run(onnx, what):
        out = subprocess.run(["node", peer, peer_onnx(onnx, dtype), "--reps",
                              str(reps)] + what,
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])["best_seconds"]

    return {"image_seconds": run(image_onnx, ["--images", "1"]),
            "text_seconds": run(text_onnx, ["--lengths", str(tokens)])}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--tokens", type=int, default=77)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--no-ort", action="store_true")
    add_compute_dtype(parser)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    datapath, peak = datapath_peak(hardware_limits(args.work),
                                   args.compute_dtype)
    print(f"machine: {datapath} peak {peak:.1f} GFLOP/s (tfmc "
          f"--compute-dtype {args.compute_dtype})")
    model = os.path.join(args.work, "clip-vit-b32-random")
    make_model(model)
    exe = link_model_bench(args.work, model, "clip_bench.c",
                           "clip-vit-b32" + "-" + args.compute_dtype,
                           ["--compute-dtype", args.compute_dtype])
    ours = json.loads(subprocess.run([exe, str(args.tokens), str(args.reps)],
                                     capture_output=True, text=True,
                                     check=True).stdout)
    theirs = torch_peer(model, args.tokens, args.reps, args.compute_dtype)
    onnx = (None if ort_unavailable(not args.no_ort)
            else ort_peer(model, args.tokens, args.reps, args.compute_dtype))
    print(f"{'input':>14} {'tfmc ms':>9} {'/s':>7} {'PyTorch ms':>11} "
          f"{'/PT':>6} {'ORT ms':>8} {'/ORT':>6}  tfmc of the {datapath} peak")
    for label, key, flops in [("224 image", "image_seconds", image_flops()),
                              (f"{args.tokens}-token text", "text_seconds",
                               text_flops(args.tokens))]:
        mine, torch_s = ours[key], theirs[key]
        ort_s = onnx[key] if onnx else None
        gflops = flops / mine / 1e9
        print(f"{label:>14} {mine * 1e3:>9.2f} {1 / mine:>7.1f} "
              f"{torch_s * 1e3:>11.2f} {torch_s / mine:>5.2f}x "
              f"{'-' if ort_s is None else f'{ort_s * 1e3:.2f}':>8} "
              f"{'-' if ort_s is None else f'{ort_s / mine:.2f}x':>6}  "
              f"{gflops:.0f} GFLOP/s = {100 * gflops / peak:.0f}%")


if __name__ == "__main__":
    main()
