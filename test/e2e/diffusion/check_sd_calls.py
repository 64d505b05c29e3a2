#!/usr/bin/env python3
"""Checks a compiled Stable Diffusion fixture's entry points against the
goldens make_sd_goldens.py wrote with diffusers (needs numpy and the
tfmc Python package, python/tfmc):

    check_sd_calls.py LIBRARY Inputs/NAME [--only ENTRY...]
    check_sd_calls.py --files Inputs/NAME...

Each of Inputs/NAME/goldens.json's `calls` (entry, input files, output
files, in the entry point's order) runs through
tfmc.load(LIBRARY).call(entry, *inputs), and each output must be within
1e-4 * max(1, |ref|) of its golden, element by element (shapes equal,
every value finite). The entry points: encode_text(ids i32[77]) -> [77, D]
(SDXL: both tokenizers' ids -> prompt_embeds [77, 96] and the pooled
text_embeds [64]); denoise(latents [2, C, h, w], timestep f32[1],
keys_values [2, N] [, text_embeds [2, P], time_ids [6]]) -> [2, 4, h, w],
a batch of two (classifier-free guidance's halves): each golden's text
goes through @text_keys_values first (the cross-attentions' keys and
values), and two goldens of one timestep (the prompt's and the negative
prompt's) share a call, one golden alone fills both halves (each half
checked); decode_latents([4, h, w])
-> [3, H, W] (vae.decode: the goldens' latents are divided by the VAE's
scaling_factor first, as the pipeline does); encode_image([3, H, W])
-> [8, h, w] (mean then logvar). Prints one line per call; exits 1 when
one fails.

--files only checks that every file goldens.json lists is there with its
shape's size, finite (no library needed).

The whole pipelines (goldens.json `pipelines`) are check_sd_images.py's.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {"f32": "<f4", "i32": "<i4"}


def load_goldens(folder):
    with open(os.path.join(folder, "goldens.json"), encoding="utf-8") as f:
        return json.load(f)


def read(folder, goldens, file):
    spec = goldens["files"][file]
    values = np.fromfile(os.path.join(folder, file), DTYPES[spec["dtype"]])
    expected = int(np.prod(spec["shape"], dtype=np.int64))
    if values.size != expected:
        raise SystemExit(f"{file}: {values.size} values, goldens.json says "
                         f"{spec['shape']}")
    return values.reshape(spec["shape"])


def scaling_factor(folder, goldens):
    """The fixture's vae/config.json scaling_factor (0.18215 by default)."""
    with open(os.path.join(folder, goldens["manifest"]), encoding="utf-8") as f:
        manifest = json.load(f)
    return manifest["components"]["vae"]["config"].get("scaling_factor",
                                                       0.18215)


def compare(actual, expected, what):
    """(ok, line): within 1e-4 * max(1, |ref|) everywhere."""
    actual = np.asarray(actual, dtype=np.float32)
    if actual.size != expected.size:
        return False, f"{what}: {actual.shape} values, expected {expected.shape}"
    actual = actual.reshape(expected.shape)
    if not np.isfinite(actual).all():
        return False, f"{what}: not finite at {np.argwhere(~np.isfinite(actual))[0]}"
    bound = 1e-4 * np.maximum(1.0, np.abs(expected))
    error = np.abs(actual.astype(np.float64) - expected)
    worst = np.unravel_index(np.argmax(error / bound), error.shape)
    ok = bool((error <= bound).all())
    return ok, (f"{'OK' if ok else 'MISMATCH'}: {what}: max abs error "
                f"{error.max():.3g}, worst {error[worst]:.3g} at {list(worst)} "
                f"(ref {expected[worst]:.6g}, bound {bound[worst]:.3g})")


def check_files(folder):
    goldens = load_goldens(folder)
    for file, spec in goldens["files"].items():
        values = read(folder, goldens, file)
        if spec["dtype"] == "f32" and not np.isfinite(values).all():
            raise SystemExit(f"{file}: not finite")
    print(f"OK: {folder}: {len(goldens['files'])} files, "
          f"{len(goldens['calls'])} calls, {len(goldens['pipelines'])} pipelines")


def check_denoise(model, folder, goldens, calls, index, done):
    """Runs @denoise on denoise call `index` and the next one of its
    timestep (or itself again) as the batch's two halves; prints each
    half's line in the goldens' order. Returns the mismatches."""
    partner = next((j for j in range(index + 1, len(calls))
                    if j not in done and calls[j]["entry"] == "denoise"
                    and calls[j]["inputs"][1] == calls[index]["inputs"][1]),
                   index)
    halves = [calls[index], calls[partner]]
    done.update((index, partner))
    inputs = [[read(folder, goldens, f) for f in call["inputs"]]
              for call in halves]
    for half in inputs:
        # The keys and values of the text, once per prompt.
        (half[2],) = model.call("text_keys_values", half[2]).values()
    batch = [np.stack([inputs[0][0], inputs[1][0]]), inputs[0][1],
             np.stack([inputs[0][2], inputs[1][2]])]
    if len(inputs[0]) == 5:  # SDXL: text_embeds per half, shared time_ids
        batch += [np.stack([inputs[0][3], inputs[1][3]]), inputs[0][4]]
    (out,) = model.call("denoise", *batch).values()
    failed = 0
    for k, call in enumerate(halves):
        ok, line = compare(out[k], read(folder, goldens, call["outputs"][0]),
                           f"@denoise({', '.join(call['inputs'])}) -> "
                           f"{call['outputs'][0]} (half {k})")
        print(line)
        failed += not ok
    return failed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", action="store_true")
    parser.add_argument("--only", nargs="+", metavar="ENTRY")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    if args.files:
        for folder in args.paths:
            check_files(folder)
        return 0
    if len(args.paths) != 2:
        parser.error("LIBRARY Inputs/NAME")
    library, folder = args.paths
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
    import tfmc
    goldens = load_goldens(folder)
    failed = 0
    calls = goldens["calls"]
    done = set()
    with tfmc.load(library) as model:
        for index, call in enumerate(calls):
            entry = call["entry"]
            if args.only and entry not in args.only or index in done:
                continue
            if entry == "denoise":
                failed += check_denoise(model, folder, goldens, calls, index,
                                        done)
                continue
            inputs = [read(folder, goldens, f) for f in call["inputs"]]
            if entry == "decode_latents":
                # @decode_latents is vae.decode; the pipeline divides by
                # the VAE's scaling_factor first (in f32, as torch does).
                inputs[0] = inputs[0] / np.float32(scaling_factor(folder,
                                                                  goldens))
            outputs = list(model.call(entry, *inputs).values())
            if len(outputs) != len(call["outputs"]):
                print(f"MISMATCH: @{entry}: {len(outputs)} outputs, the goldens "
                      f"have {len(call['outputs'])}")
                failed += 1
                continue
            for out, file in zip(outputs, call["outputs"]):
                ok, line = compare(out, read(folder, goldens, file),
                                   f"@{entry}({', '.join(call['inputs'])}) -> {file}")
                print(line)
                failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
