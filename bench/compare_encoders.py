#!/usr/bin/env python3
"""bench/compare_encoders.py: a BERT-base-shaped encoder (12 layers, 768
wide, 12 heads, FFN 3072, vocab 30522; random weights) encoding one
sequence, and a ViT-B/16-shaped image encoder (224x224, 197 tokens) on one
image and on a batch of images, tfmc against transformers' BertModel /
ViTModel on PyTorch and against ONNX Runtime, beside the machine's FP32
peak measured in the same run.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 bench/compare_encoders.py [--seq 128,512] [--reps 20]
        [--no-vit] [--images 8] [--batches 32:128-128,32:8-64,8:16-128]
        [--no-ort]

tfmc: the model compiled with --emit=lib and timed through tfm_model_call
(bench/encode_bench.c). PyTorch at its fastest setting here
(OPENBLAS_NUM_THREADS=2, torch.set_num_threads(1)), eager attention, no
grad. ONNX Runtime: onnxruntime-node (bench/package.json, installed with
npm on first use; skipped if that fails or with --no-ort) on the same
model exported by export_onnx_encoder.py, CPU, 2 intra-op threads, all
graph optimizations (bench/ort_encoder_peer.js). Printed: milliseconds per
sequence or image, the ratios, and tfmc's GFLOP/s as a fraction of the
peak. Every figure is the best of the repetitions.

Image batch cell: N images through @encode_batch (tfm-batch-images) in one
call and one call of @encode each; ONNX Runtime and PyTorch on the
[N, 3, 224, 224] batch.

Batch cells (B:MIN-MAX): B sequences of MIN to MAX tokens, as sentence
embedders see them. tfmc packed end to end in one call of @encode_batch
(tfm-pack-sequences; the runtime runs it in groups of whole sequences of
at most 160 tokens), one call per sequence, and packed with every
sequence padded to the longest (the work of a padded batch); PyTorch and
ONNX Runtime pad to the longest with an attention mask, as transformers'
tokenizers do with padding=True. Printed: milliseconds per batch and
sequences/s.
"""
import argparse
import json
import os
import subprocess
import sys

from compare_peers import (COMPUTE_DTYPES, datapath_peak, hardware_limits,
                           link_model_bench, ort_unavailable, peer_onnx,
                           torch_quantization)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

def make_model(directory, vit=False):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return
    torch.manual_seed(0)
    model = (tf.ViTModel(tf.ViTConfig(), add_pooling_layer=False) if vit else
             tf.BertModel(tf.BertConfig(), add_pooling_layer=False)).eval()
    model.save_pretrained(directory, safe_serialization=True)


def flops_per_sequence(seq, d=768, layers=12, ffn=3072):
    matmuls = layers * (4 * d * d + 2 * d * ffn)
    attention = layers * 2 * seq * seq * d
    return 2 * (matmuls * seq + attention)


class OrtPeer:
    """ONNX Runtime on the exported model; unavailable (with the reason
    printed once) when onnxruntime-node or the export cannot be had."""

    def __init__(self, work, enabled):
        self.work, self.reason = work, ort_unavailable(enabled)

    def export(self, directory, vit, dtype="f32"):
        onnx = directory + ".onnx"
        if not os.path.exists(onnx):
            subprocess.run([sys.executable, os.path.join(HERE, "export_onnx_encoder.py"),
                            directory, onnx] + (["--vit"] if vit else []),
                           check=True, capture_output=True)
        return peer_onnx(onnx, dtype)

    def best_seconds(self, directory, reps, lengths=None, images=None,
                     dtype="f32", output=None):
        """Seconds per call: a batch of sequences padded to the longest
        (`lengths`), or `images` images; on the model quantize_dynamic
        makes for an int8 `dtype`; `output` a file for one more call's
        output. None when unavailable."""
        if self.reason:
            return None
        what = (["--images", str(images)] if images else
                ["--lengths", ",".join(map(str, lengths))])
        what += ["--output", output] if output else []
        out = subprocess.run(["node", os.path.join(HERE, "ort_encoder_peer.js"),
                              self.export(directory, bool(images), dtype),
                              "--reps", str(reps)]
                             + what, capture_output=True, text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])["best_seconds"]


def ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.1f}"


def ratio(theirs, ours):
    return "-" if theirs is None else f"{theirs / ours:.2f}x"


def torch_peer(directory, seq, reps, vit=False, images=1, dtype="f32",
               output=None):
    """PyTorch's best seconds; for an int8 `dtype`, the model as
    torch.quantization.quantize_dynamic makes it (nn.Linear's weights int8
    per tensor, activations quantized at each call), on both threads (its
    own kernels'; the f32 model is fastest with OpenBLAS's).
    `output`: a file for the last hidden state of one more call (raw f32)."""
    cls = "ViT" if vit else "Bert"
    quantize = torch_quantization(dtype)
    inputs = (f"torch.rand({images}, 3, 224, 224)" if vit else
              f"torch.arange(1000, 1000 + {seq}).unsqueeze(0)")
    code = f"""
import json, time, torch, transformers as tf
torch.set_num_threads(1)
config = tf.{cls}Config.from_pretrained({directory!r})
config._attn_implementation = "eager"
model = tf.{cls}Model.from_pretrained({directory!r}, config=config, add_pooling_layer=False).eval()
{quantize}
ids = {inputs}
times = []
with torch.no_grad():
    for r in range({reps} + 2):
        start = time.perf_counter()
        model(ids)
        times.append(time.perf_counter() - start)
times = times[2:]
if {output!r}:
    with torch.no_grad():
        model(ids).last_hidden_state.numpy().tofile({output!r})
print(json.dumps({{"seconds_per_call": sum(times) / len(times), "best_seconds": min(times)}}))
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def torch_batch_peer(directory, lengths, reps):
    code = f"""
import json, time, torch, transformers as tf
torch.set_num_threads(1)
config = tf.BertConfig.from_pretrained({directory!r})
config._attn_implementation = "eager"
model = tf.BertModel.from_pretrained({directory!r}, config=config, add_pooling_layer=False).eval()
lengths = {lengths!r}
longest = max(lengths)
ids = torch.full((len(lengths), longest), 0, dtype=torch.long)
mask = torch.zeros((len(lengths), longest), dtype=torch.long)
for b, n in enumerate(lengths):
    ids[b, :n] = torch.arange(1000, 1000 + n)
    mask[b, :n] = 1
times = []
with torch.no_grad():
    for r in range({reps} + 1):
        start = time.perf_counter()
        model(ids, attention_mask=mask)
        times.append(time.perf_counter() - start)
print(json.dumps({{"best_seconds": min(times[1:])}}))
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def batch_cells(exe, model, spec, reps, peak, ort):
    print(f"{'batch':>12} {'packed ms':>10} {'1-by-1 ms':>10} "
          f"{'padded ms':>10} {'PyTorch ms':>11} {'/PT':>6} {'ORT ms':>8} "
          f"{'/ORT':>6}  packed of the peak")
    for cell in spec.split(","):
        batch, span = cell.split(":")
        low, high = span.split("-")
        ours = json.loads(subprocess.run(
            [exe, "--batch", batch, low, high, str(reps)], capture_output=True,
            text=True, check=True).stdout)
        theirs = torch_batch_peer(model, ours["lengths"], reps)
        onnx = ort.best_seconds(model, reps, lengths=ours["lengths"])
        flops = sum(flops_per_sequence(n) for n in ours["lengths"])
        gflops = flops / ours["packed_seconds"] / 1e9
        print(f"{cell:>12} {ours['packed_seconds'] * 1e3:>10.1f} "
              f"{ours['one_by_one_seconds'] * 1e3:>10.1f} "
              f"{ours['padded_seconds'] * 1e3:>10.1f} "
              f"{theirs['best_seconds'] * 1e3:>11.1f} "
              f"{theirs['best_seconds'] / ours['packed_seconds']:>5.2f}x "
              f"{ms(onnx):>8} {ratio(onnx, ours['packed_seconds']):>6}  "
              f"{gflops:.0f} GFLOP/s = {100 * gflops / peak:.0f}%; "
              f"{int(batch) / ours['packed_seconds']:.0f} sequences/s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--seq", default="128,512")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--no-vit", action="store_true")
    parser.add_argument("--batches", default="32:128-128,32:8-64,8:16-128",
                        help="batch cells B:MIN-MAX ('' for none)")
    parser.add_argument("--images", type=int, default=8,
                        help="images in the image batch cell (0: none)")
    parser.add_argument("--no-ort", action="store_true")
    parser.add_argument("--accuracy", action="store_true",
                        help="also each BERT cell's least row cosine against "
                             "PyTorch f32's hidden states: tfmc in each dtype, "
                             "and the peers of the int8 rows")
    parser.add_argument("--dtypes", default="f32",
                        help="tfmc's --compute-dtype for each row of the "
                             "single-input cells, comma-separated (f32,bf16,"
                             "int8; the batch cells use the first). An int8 "
                             "row's peers are int8 too: PyTorch's and ONNX "
                             "Runtime's quantize_dynamic")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    peak = hardware_limits(args.work)
    print(f"machine: FP32 peak {peak['fp32_peak_gflops']:.1f} GFLOP/s, "
          f"BF16 {peak.get('bf16_peak_gflops')}")
    ort = OrtPeer(args.work, not args.no_ort)
    dtypes = args.dtypes.split(",")
    for dtype in dtypes:
        if dtype not in COMPUTE_DTYPES:
            parser.error(f"--dtypes: {dtype} is not one of {', '.join(COMPUTE_DTYPES)}")
    berts = {dtype: compile_bench(args.work, "bert-base-random", False, dtype)
             for dtype in dtypes}
    print(f"{'input':>10} {'tfmc':>5} {'tfmc ms':>9} {'PyTorch ms':>11} "
          f"{'/PT':>6} {'ORT ms':>8} {'/ORT':>6}  tfmc of its datapath's peak")
    cells = [(f"{seq} tok", berts, seq, False) for seq in
             [int(s) for s in args.seq.split(",")]]
    vits = None
    if not args.no_vit:
        # ViT-B/16: 196 patches + the class token; the patch GEMM included.
        vits = {dtype: compile_bench(args.work, "vit-base-random", True, dtype)
                for dtype in dtypes}
        cells.append(("224 image", vits, 197, True))
    for label, compiled, seq, is_vit in cells:
        model = compiled[dtypes[0]][0]
        # Outputs for --accuracy (BERT: the peers feed the same ids).
        accuracy = args.accuracy and not is_vit
        out = (lambda name: os.path.join(args.work, f"{name}-{seq}.f32")
               if accuracy else None)
        if accuracy:
            for name in ("torch-f32", "torch-int8", "ort-f32", "ort-int8",
                         *(f"tfmc-{dtype}" for dtype in dtypes)):
                if os.path.exists(out(name)):
                    os.remove(out(name))
        # The peers run in f32, and in int8 for the int8 rows; PyTorch's
        # f32 is --accuracy's reference whatever the rows.
        peers = {}
        wanted = {peer_dtype(dtype) for dtype in dtypes}
        for peer in sorted(wanted | ({"f32"} if accuracy else set())):
            peers[peer] = (
                torch_peer(model, seq, args.reps, is_vit, dtype=peer,
                           output=out(f"torch-{peer}")),
                ort.best_seconds(model, args.reps, images=1, dtype=peer) if is_vit
                else ort.best_seconds(model, args.reps, lengths=[seq], dtype=peer,
                                      output=out(f"ort-{peer}")))
        for dtype in dtypes:
            theirs, onnx = peers[peer_dtype(dtype)]
            exe = compiled[dtype][1]
            ours = json.loads(subprocess.run(
                [exe, str(seq), str(args.reps)] +
                ([out(f"tfmc-{dtype}")] if accuracy else []),
                capture_output=True, text=True, check=True).stdout)
            gflops = flops_per_image(1) if is_vit else flops_per_sequence(seq)
            gflops /= ours["best_seconds"] * 1e9
            print(f"{label:>10} {dtype:>5} {ours['best_seconds'] * 1e3:>9.2f} "
                  f"{theirs['best_seconds'] * 1e3:>11.2f} "
                  f"{theirs['best_seconds'] / ours['best_seconds']:>5.2f}x "
                  f"{ms(onnx):>8} {ratio(onnx, ours['best_seconds']):>6}  "
                  f"{peak_share(gflops, peak, dtype)}")
        if accuracy:
            print_accuracy(label, out, dtypes, seq)
    vit = vits[dtypes[0]] if vits else None
    bert = berts[dtypes[0]]
    if vit and args.images:
        image_batch_cell(vit, args.images, args.reps, peak["fp32_peak_gflops"], ort)
    if args.batches:
        model, exe = bert
        batch_cells(exe, model, args.batches, args.reps,
                    peak["fp32_peak_gflops"], ort)


def peer_dtype(dtype):
    """What the peers of a tfmc `dtype` row run in: int8 for int8, else
    f32 (neither peer has a bf16 path here)."""
    return "int8" if dtype == "int8" else "f32"


def print_accuracy(label, out, dtypes, seq):
    """Each output's least row cosine against PyTorch f32's: tfmc's in each
    dtype and the peers' that ran (files `out(name)`, `seq` rows each)."""
    import numpy as np
    reference = np.fromfile(out("torch-f32"), dtype=np.float32).reshape(seq, -1)
    names = [f"tfmc-{d}" for d in dtypes] + ["torch-int8", "ort-f32", "ort-int8"]
    cells = []
    for name in names:
        if not os.path.exists(out(name)):
            continue
        rows = np.fromfile(out(name), dtype=np.float32).reshape(seq, -1)
        cosine = (rows * reference).sum(1) / (np.linalg.norm(rows, axis=1) *
                                              np.linalg.norm(reference, axis=1))
        cells.append(f"{name} {cosine.min():.5f}")
    print(f"{label:>10} least row cosine against PyTorch f32: " + ", ".join(cells))


def flops_per_image(images):
    """ViT-B/16 at 224: the encoder over 197 tokens and the patch GEMM."""
    return images * (flops_per_sequence(197) + 2 * 196 * 768 * 768)


def image_batch_cell(vit, images, reps, peak, ort):
    model, exe = vit
    ours = json.loads(subprocess.run([exe, "--images", str(images), str(reps)],
                                     capture_output=True, text=True,
                                     check=True).stdout)
    theirs = torch_peer(model, 197, reps, vit=True, images=images)
    onnx = ort.best_seconds(model, reps, images=images)
    gflops = flops_per_image(images) / ours["batch_seconds"] / 1e9
    print(f"{'images':>12} {'batch ms':>10} {'1-by-1 ms':>10} {'PyTorch ms':>11} "
          f"{'/PT':>6} {'ORT ms':>8} {'/ORT':>6}  batch of the peak")
    print(f"{images:>12} {ours['batch_seconds'] * 1e3:>10.1f} "
          f"{ours['one_by_one_seconds'] * 1e3:>10.1f} "
          f"{theirs['best_seconds'] * 1e3:>11.1f} "
          f"{theirs['best_seconds'] / ours['batch_seconds']:>5.2f}x "
          f"{ms(onnx):>8} {ratio(onnx, ours['batch_seconds']):>6}  "
          f"{gflops:.0f} GFLOP/s = {100 * gflops / peak:.0f}%; "
          f"{images / ours['batch_seconds']:.1f} images/s")


def compile_bench(work, name, vit, dtype="f32"):
    """The random model `name` compiled as a library whose GEMMs multiply
    in `dtype` (tfmc --compute-dtype: bf16 stores the weights as bf16,
    int8 as int8) and linked into encode_bench.c; returns (model folder,
    executable)."""
    model = os.path.join(work, name)
    make_model(model, vit)
    return model, link_model_bench(work, model, "encode_bench.c",
                                   f"{name}-{dtype}", ["--compute-dtype", dtype])


def peak_share(gflops, limits, dtype):
    datapath, peak = datapath_peak(limits, dtype)
    return f"{gflops:.0f} GFLOP/s = {100 * gflops / peak:.0f}% of {datapath}"


if __name__ == "__main__":
    main()
