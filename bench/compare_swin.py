#!/usr/bin/env python3
"""bench/compare_swin.py: a Swin-T-shaped image classifier
(SwinForImageClassification with transformers' SwinConfig defaults: 224x224
in 4x4 patches, 7x7 windows, depths 2, 2, 6, 2, 96 wide; 1000 labels;
random weights) on one image, tfmc against PyTorch and ONNX Runtime,
beside the machine's FP32 peak measured in the same run.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 bench/compare_swin.py [--reps 10] [--no-ort]

tfmc: the model compiled with --emit=staticlib and timed through
tfm_model_call on @classify (bench/features_bench.c). PyTorch: the forward
(OPENBLAS_NUM_THREADS=2, torch.set_num_threads(2), no grad). ONNX Runtime:
onnxruntime-node on the torch.onnx export (CPU, 2 intra-op threads;
bench/ort_encoder_peer.js --images 1). Printed: ms per image, images/s, the
ratios, and tfmc's GFLOP/s against the peak. Best of the repetitions.
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


def make_model(directory):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return
    torch.manual_seed(0)
    labels = {i: f"class {i}" for i in range(1000)}
    model = tf.SwinForImageClassification(tf.SwinConfig(
        architectures=["SwinForImageClassification"], id2label=labels)).eval()
    model.save_pretrained(directory, safe_serialization=True)


def flops():
    """Swin-T's multiply-adds x 2: projections, MLPs, window attention,
    patch merging and the patch embedding."""
    total, tokens, width = 2 * 3136 * 48 * 96, 3136, 96
    for stage, depth in enumerate([2, 2, 6, 2]):
        per_block = 2 * tokens * (4 * width * width + 8 * width * width)
        per_block += 4 * tokens * 49 * width  # scores and values, 49 keys
        total += depth * per_block
        if stage < 3:
            tokens //= 4
            total += 2 * tokens * 4 * width * 2 * width
            width *= 2
    return total + 2 * width * 1000


def torch_peer(directory, reps, dtype):
    return torch_best_seconds(
        f"model = tf.SwinForImageClassification.from_pretrained({directory!r}).eval()\n"
        f"{torch_quantization(dtype)}\n"
        "x = torch.rand(1, 3, 224, 224)", "model(pixel_values=x)", reps)


def ort_peer(directory, reps, dtype):
    onnx = directory + ".onnx"
    if not os.path.exists(onnx):
        code = f"""
import torch, transformers as tf
model = tf.SwinForImageClassification.from_pretrained({directory!r}).eval()
torch.onnx.export(model, (torch.rand(1, 3, 224, 224),), {onnx!r},
                  input_names=["pixel_values"], output_names=["logits"],
                  opset_version=14)
"""
        subprocess.run([sys.executable, "-c", code], check=True,
                       capture_output=True)
    out = subprocess.run(["node", os.path.join(HERE, "ort_encoder_peer.js"),
                          peer_onnx(onnx, dtype), "--images", "1", "--reps",
                          str(reps)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["best_seconds"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--no-ort", action="store_true")
    add_compute_dtype(parser)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    datapath, peak = datapath_peak(hardware_limits(args.work),
                                   args.compute_dtype)
    print(f"machine: {datapath} peak {peak:.1f} GFLOP/s (tfmc "
          f"--compute-dtype {args.compute_dtype})")
    model = os.path.join(args.work, "swin-tiny-random")
    make_model(model)
    exe = link_model_bench(args.work, model, "features_bench.c",
                           "swin-tiny" + "-" + args.compute_dtype,
                           ["--compute-dtype", args.compute_dtype])
    ours = json.loads(subprocess.run([exe, "0", str(args.reps)],
                                     capture_output=True, text=True,
                                     check=True).stdout)["seconds"]
    theirs = torch_peer(model, args.reps, args.compute_dtype)
    onnx = (None if ort_unavailable(not args.no_ort)
            else ort_peer(model, args.reps, args.compute_dtype))
    gflops = flops() / ours / 1e9
    print(f"{'input':>10} {'tfmc ms':>8} {'/s':>6} {'PyTorch ms':>11} {'/PT':>6} "
          f"{'ORT ms':>7} {'/ORT':>6}  tfmc of the {datapath} peak")
    print(f"{'224 image':>10} {ours * 1e3:>8.1f} {1 / ours:>6.1f} "
          f"{theirs * 1e3:>11.1f} {theirs / ours:>5.2f}x "
          f"{'-' if onnx is None else f'{onnx * 1e3:.1f}':>7} "
          f"{'-' if onnx is None else f'{onnx / ours:.2f}x':>6}  "
          f"{gflops:.0f} GFLOP/s = {100 * gflops / peak:.0f}%")


if __name__ == "__main__":
    main()
