#!/usr/bin/env python3
"""Writes the Stable Diffusion benchmark's weights (bench/sd_bench.sh): a
diffusers folder shaped as the published runwayml/stable-diffusion-v1-5
(UNet 860M parameters, VAE 84M, CLIP ViT-L/14 text 123M), random weights.

    make_sd15_weights.py OUT_DIR [--small] [--dtype f32|f16|bf16]
    make_sd15_weights.py --write-manifest      # diffusers 0.27.2 (see below)

The folder is make_sd_fixture.py's (the same files, tensor order, header
and values, from the same seed), written from a manifest whose configs are
the cut fixture's (test/e2e/diffusion/Inputs/stable-diffusion-v1-5.json)
with each value make_sd_goldens.py marks "cut" set back to the published
one (PUBLISHED below). The tensor names and shapes of those configs are
diffusers' and transformers' own: --write-manifest instantiates
UNet2DConditionModel, AutoencoderKL and CLIPTextModel from them through
make_sd_goldens.py's manifest_of (torch's initializers switched off, so
the 4 GB of parameters are never touched), checks the published parameter
counts, and writes bench/Inputs/sd15-full.json, which is committed:
writing the weights needs only numpy. No single-file (LDM names)
checkpoint is written: stable-diffusion.cpp reads the diffusers folder.

What stays cut: the tokenizer (1000 of CLIP's 49408 tokens; the text
encoder's embedding table has the published 49408 rows, tfmc takes a
tokenizer no larger than the table, and stable-diffusion.cpp has CLIP's
own vocabulary built in). The benchmark times @denoise and
@decode_latents, which no token reaches.

--small writes the cut fixture itself (the same bytes as make_sd_fixture.py
MANIFEST OUT_DIR): the benchmark's smoke test.

The values are make_sd_fixture.random_f32's (7 random mantissa bits,
magnitudes near 0.65/sqrt(fan-in)), computed here with numpy from the
same random bytes (Python's random.Random(seed/component/name).randbytes);
every value is exact in f32, f16 and bf16, so --dtype f16 and bf16 write
the same weights. Tensors are written one at a time (the largest is 59 MB),
into OUT_DIR.partial, renamed to OUT_DIR when complete: a run cut short is
started again from nothing, and an existing OUT_DIR is left as it is
(delete it to rewrite); bench-weights.json in it records the dtype and
sizes. About 4.3 GB in f32, 2.1 GB in f16 or bf16; two minutes here
(Python's random bytes are the limit).
"""
import argparse
import copy
import json
import os
import random
import shutil
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "test", "e2e", "diffusion")
sys.path.insert(0, FIXTURES)
import make_sd_fixture as fixture  # noqa: E402

CUT_MANIFEST = os.path.join(FIXTURES, "Inputs", "stable-diffusion-v1-5.json")
FULL_MANIFEST = os.path.join(HERE, "Inputs", "sd15-full.json")

# The values make_sd_goldens.py marks "cut" for SD 1.5, as published
# (runwayml/stable-diffusion-v1-5's unet/, vae/ and text_encoder/
# config.json); every other key is the fixture's, which is the published.
PUBLISHED = {
    "unet": {
        "block_out_channels": [320, 640, 1280, 1280],
        "cross_attention_dim": 768,
        "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                             "CrossAttnDownBlock2D", "DownBlock2D"],
        "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D",
                           "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
        "layers_per_block": 2,
        "norm_num_groups": 32,
        "sample_size": 64,
    },
    "vae": {
        "block_out_channels": [128, 256, 512, 512],
        "layers_per_block": 2,
        "norm_num_groups": 32,
        "sample_size": 512,
    },
    "text_encoder": {
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "projection_dim": 768,
        "vocab_size": 49408,
    },
}

# Parameter counts of the published SD 1.5, checked on every write.
PUBLISHED_PARAMETERS = {"unet": 859520964, "vae": 83653863,
                        "text_encoder": 123060480}


def full_configs(cut):
    """The cut manifest's configs with PUBLISHED put back."""
    configs = {}
    for comp, values in PUBLISHED.items():
        config = copy.deepcopy(cut["components"][comp]["config"])
        missing = set(values) - set(config)
        if missing:
            raise SystemExit(f"{comp}: the fixture's config has no {missing}")
        config.update(values)
        configs[comp] = config
    return configs


def write_manifest():
    """bench/Inputs/sd15-full.json from diffusers and transformers (run with
    /tmp/tfm-hfref/env.sh sourced)."""
    import torch
    # Parameters are allocated but never written: the initializers are
    # what would touch (and spend minutes on) 4 GB of them.
    for name in ("kaiming_uniform_", "uniform_", "normal_", "trunc_normal_",
                 "xavier_uniform_", "zeros_", "ones_", "constant_"):
        setattr(torch.nn.init, name, lambda tensor, *a, **k: tensor)
    import make_sd_goldens as goldens
    cut = fixture.load_manifest(CUT_MANIFEST)
    spec = dict(goldens.MODELS["stable-diffusion-v1-5"])
    spec.update(full_configs(cut))
    manifest = goldens.manifest_of("stable-diffusion-v1-5-full", spec)
    # The cut fixture's files and seed, only the three configs and their
    # tensors differ.
    for key in ("seed", "gains", "model_index", "single_file"):
        if manifest[key] != cut[key]:
            raise SystemExit(f"{key} differs from the cut manifest's")
    manifest["note"] = ("written by bench/make_sd15_weights.py --write-manifest: "
                        "the cut fixture's manifest with the published widths "
                        "and depths (PUBLISHED there); tensors from diffusers "
                        "0.27.2 and transformers 4.40.2")
    counts = parameter_counts(manifest)
    if counts != PUBLISHED_PARAMETERS:
        raise SystemExit(f"parameter counts {counts}, published "
                         f"{PUBLISHED_PARAMETERS}")
    os.makedirs(os.path.dirname(FULL_MANIFEST), exist_ok=True)
    with open(FULL_MANIFEST, "w", encoding="utf-8") as f:
        f.write(goldens.compact_json(manifest))
    print(f"{FULL_MANIFEST}: {counts}")


def parameter_counts(manifest):
    return {comp: sum(fixture.count_of(s) for _, s in spec["tensors"])
            for comp, spec in manifest["components"].items()
            if "tensors" in spec}


def random_f32(np, manifest, comp, name, shape):
    """make_sd_fixture.random_f32's values as a numpy f32 array (the same
    random bytes, the same bits)."""
    e, signed = fixture.exponent(manifest, comp, name, shape)
    n = fixture.count_of(shape)
    rng = random.Random(f"{manifest['seed']}/{comp}/{name}")
    raw = np.frombuffer(rng.randbytes(2 * n), np.uint8).reshape(n, 2)
    biased = 127 + e
    low = ((biased & 1) << 7) | (raw[:, 0] & 0x7F)
    high = (raw[:, 1] & (0x80 if signed else 0)) | (biased >> 1)
    bits = (high.astype(np.uint32) << 24) | (low.astype(np.uint32) << 16)
    return bits.view(np.float32)


def encoded(np, values, dtype):
    if dtype == "f32":
        return values.astype("<f4").tobytes()
    if dtype == "bf16":  # exact: the low 16 bits are zero
        return (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    return values.astype("<f2").tobytes()


ITEM_SIZES = {"f32": 4, "f16": 2, "bf16": 2}


def write_safetensors(np, path, manifest, comp, tensors, dtype):
    """make_sd_fixture.write_safetensors's file, tensor by tensor."""
    header, offset = {}, 0
    tensors = sorted(tensors, key=lambda t: t[0])
    for name, shape in tensors:
        size = fixture.count_of(shape) * ITEM_SIZES[dtype]
        header[name] = {"dtype": fixture.ST_DTYPES[dtype], "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape in tensors:
            f.write(encoded(np, random_f32(np, manifest, comp, name, shape),
                            dtype))
    return offset


def write_folder(manifest, out, dtype):
    """make_sd_fixture.write_fixture's folder (no variant)."""
    import numpy as np
    partial = out.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    # Everything but the weight files: the fixture's own writer, on the
    # manifest without tensors.
    light = copy.deepcopy(manifest)
    for spec in light["components"].values():
        spec.pop("tensors", None)
    fixture.write_fixture(light, partial, dtype)
    total = 0
    for comp, spec in manifest["components"].items():
        if "tensors" not in spec:
            continue
        folder = os.path.join(partial, comp)
        fixture.write_json(os.path.join(folder, "config.json"), spec["config"])
        start = time.time()
        path = os.path.join(folder, fixture.WEIGHT_FILES[comp] + ".safetensors")
        size = write_safetensors(np, path, manifest, comp, spec["tensors"], dtype)
        total += size
        print(f"{comp}: {size // ITEM_SIZES[dtype] / 1e6:.1f}M "
              f"parameters, {size / 1e9:.2f} GB, {time.time() - start:.0f} s",
              flush=True)
    with open(os.path.join(partial, "bench-weights.json"), "w") as f:
        json.dump({"manifest": manifest["name"], "dtype": dtype,
                   "parameters": parameter_counts(manifest),
                   "weight_bytes": total}, f, indent=1)
    os.rename(partial, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--small", action="store_true",
                        help="the cut fixture (test/e2e/diffusion)")
    parser.add_argument("--dtype", choices=("f32", "f16", "bf16"), default="f32")
    parser.add_argument("--write-manifest", action="store_true",
                        help="write bench/Inputs/sd15-full.json (diffusers)")
    args = parser.parse_args()
    if args.write_manifest:
        write_manifest()
        return
    if not args.out:
        parser.error("OUT_DIR")
    if os.path.isdir(args.out):
        print(f"{args.out}: there already (delete it to rewrite)")
        return
    manifest = fixture.load_manifest(CUT_MANIFEST if args.small else FULL_MANIFEST)
    if not args.small and parameter_counts(manifest) != PUBLISHED_PARAMETERS:
        raise SystemExit(f"{FULL_MANIFEST}: parameter counts "
                         f"{parameter_counts(manifest)}, published "
                         f"{PUBLISHED_PARAMETERS}")
    write_folder(manifest, args.out, args.dtype)


if __name__ == "__main__":
    main()
