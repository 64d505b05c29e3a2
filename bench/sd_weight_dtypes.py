#!/usr/bin/env python3
"""How far each --weights-dtype moves a Stable Diffusion image from f32's
(issue 72: "--weights-dtype bf16/f16/int8 works for the UNet and VAE;
report the image's difference from f32 for each"). Prints a Markdown table
and one JSON line.

    /usr/bin/python3 bench/sd_weight_dtypes.py [FOLDER] [--image-size WxH]
        [--steps 4] [--seed 1234] [--dtypes bf16,f16,int8] [--exact-weights]
        [--work DIR [--keep]]

With --work the folder copy and the libraries stay there and are used
again (a library is compiled again when tfmc is newer than it).

FOLDER is a diffusers folder (default: the SD 1.5 fixture, cut widths,
written by make_sd15_weights.py --small into the work folder; the
full-size one of make_sd15_weights.py works too, at 4 compiles of 4 GB).
It is compiled with `tfmc --emit=lib --weights-dtype D` for f32 and each
dtype (--image-size: default the UNet's sample_size x 8), and each library
runs, through python/tfmc:

- generate_image: the folder's scheduler, --steps steps, guidance 7.5,
  the same prompt, seed and initial latents (`noise=`, the executable's
  --noise): the image in [0, 1], [H, W, 3];
- @denoise once and @decode_latents once on the same seeded inputs, to
  tell the UNet's share from the VAE's.

Each row gives the max and mean |difference| from f32's output (for the
image also the PSNR over [0, 1]) and f32's max |output| for scale.

make_sd_fixture.py's weights have 7 mantissa bits, exact in bf16 and f16,
which trained weights are not: by default the folder is copied with the
low 16 bits of every f32 weight filled with random bits (seeded), so that
bf16 and f16 round every weight as they would a real checkpoint's.
--exact-weights compiles the folder as it is (then f16 can match f32 bit
for bit, and bf16 differs only where its kernels round the activations).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import tfmc  # noqa: E402

PROMPT = "a photograph of an astronaut riding a horse on the moon"


def sample_size(folder):
    with open(os.path.join(folder, "unet", "config.json")) as f:
        s = 8 * json.load(f)["sample_size"]
    return f"{s}x{s}"


def run(library, steps, seed):
    """(image, @denoise output, @decode_latents output) of one library."""
    with tfmc.load(library) as model:
        rng = np.random.default_rng(seed)
        noise = rng.standard_normal(model.description["latent_shape"]).astype(np.float32)
        image = model.generate_image(PROMPT, negative_prompt="", steps=steps,
                                     guidance=7.5, seed=seed, noise=noise)
        entries = model.description["entry_points"]
        inputs = []
        for t in entries["denoise"]["inputs"]:
            if int(np.prod(t["shape"])) == 1:
                inputs.append(np.full(t["shape"], 500.0, np.float32))
            else:
                inputs.append(rng.standard_normal(t["shape"]).astype(np.float32))
        (noise_pred,) = model.call("denoise", *inputs).values()
        (latents,) = [rng.standard_normal(t["shape"]).astype(np.float32)
                      for t in entries["decode_latents"]["inputs"]]
        (decoded,) = model.call("decode_latents", latents).values()
        return np.array(image), np.array(noise_pred), np.array(decoded)


def densified(folder, out, seed):
    """A copy of `folder` whose f32 weights have random low 16 bits."""
    shutil.copytree(folder, out)
    rng = np.random.default_rng(seed)
    for comp in sorted(os.listdir(out)):
        for name in sorted(os.listdir(os.path.join(out, comp))
                           if os.path.isdir(os.path.join(out, comp)) else []):
            if not name.endswith(".safetensors"):
                continue
            path = os.path.join(out, comp, name)
            with open(path, "rb") as f:
                size = int.from_bytes(f.read(8), "little")
                header = json.loads(f.read(size))
            data = np.memmap(path, np.uint8, "r+", offset=8 + size)
            for tensor, spec in sorted(header.items()):
                if tensor == "__metadata__" or spec["dtype"] != "F32":
                    continue
                begin, end = spec["data_offsets"]
                bits = data[begin:end].view("<u4")
                bits |= rng.integers(0, 1 << 16, bits.size, dtype=np.uint32)
            data.flush()
            del data
    return out


def difference(a, ref, unit_range=False):
    if not np.isfinite(a).all():
        return {"finite": False}
    d = np.abs(a.astype(np.float64) - ref)
    out = {"max_abs": float(d.max()), "mean_abs": float(d.mean()),
           "ref_max_abs": float(np.abs(ref).max())}
    if unit_range:
        mse = float((d ** 2).mean())
        out["psnr_db"] = math.inf if mse == 0 else 10 * math.log10(1 / mse)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--image-size")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--dtypes", default="bf16,f16,int8")
    parser.add_argument("--work", help="where the libraries go (default: a "
                        "temporary folder, removed unless --keep)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--exact-weights", action="store_true",
                        help="the folder's weights as they are (see above)")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="sd-dtypes-")
    os.makedirs(work, exist_ok=True)
    try:
        folder = args.folder
        if folder is None:
            folder = os.path.join(work, "sd15-small")
            if not os.path.isdir(folder):
                subprocess.run([sys.executable, os.path.join(HERE, "make_sd15_weights.py"),
                                "--small", folder], check=True,
                               stdout=subprocess.DEVNULL)
        if not args.exact_weights:
            dense = os.path.join(work, "dense-" + os.path.basename(folder.rstrip("/")))
            if not os.path.isdir(dense):
                densified(folder, dense, args.seed)
            folder = dense
        size = args.image_size or sample_size(folder)
        outputs = {}
        for dtype in ["f32"] + args.dtypes.split(","):
            library = os.path.join(work, f"libsd-{dtype}.so")
            compiler = tfmc._tfmc_path()
            if not os.path.exists(library) or (
                    os.path.exists(compiler) and
                    os.path.getmtime(compiler) > os.path.getmtime(library)):
                tfmc.compile(folder, library, weights_dtype=dtype,
                             args=["--image-size", size], progress=False)
            outputs[dtype] = run(library, args.steps, args.seed)
        ref = outputs["f32"]
        report = {"folder": folder, "exact_weights": args.exact_weights,
                  "image_size": size, "steps": args.steps,
                  "seed": args.seed, "dtypes": {}}
        print(f"{folder}, {size}, {args.steps} steps, seed {args.seed}: "
              "|output - f32's output|")
        print()
        print("| --weights-dtype | image max | image mean | PSNR | @denoise max "
              "(f32 max) | @decode_latents max (f32 max) |")
        print("|---|---|---|---|---|---|")
        for dtype, (image, noise_pred, decoded) in outputs.items():
            if dtype == "f32":
                continue
            row = {"image": difference(image, ref[0], unit_range=True),
                   "denoise": difference(noise_pred, ref[1]),
                   "decode_latents": difference(decoded, ref[2])}
            report["dtypes"][dtype] = row
            if not all(v.get("finite", True) for v in row.values()):
                print(f"| {dtype} | not finite | | | | |")
                continue
            print(f"| {dtype} | {row['image']['max_abs']:.3g} | "
                  f"{row['image']['mean_abs']:.3g} | "
                  f"{row['image']['psnr_db']:.1f} dB | "
                  f"{row['denoise']['max_abs']:.3g} "
                  f"({row['denoise']['ref_max_abs']:.3g}) | "
                  f"{row['decode_latents']['max_abs']:.3g} "
                  f"({row['decode_latents']['ref_max_abs']:.3g}) |")
        print()
        print(json.dumps(report))
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
