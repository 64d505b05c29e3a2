#!/usr/bin/env python3
"""Runs a compiled Stable Diffusion executable for each whole pipeline of
Inputs/NAME/goldens.json that it draws (text-to-image; `--only PREFIX`
picks some) and compares its image with diffusers' within 1e-3:

    check_sd_images.py EXECUTABLE Inputs/NAME [--only PREFIX...]

Each run starts from the golden's initial latents (--noise, diffusers'
`latents=`) and seed (the generator Euler ancestral draws its noise from),
with the golden's prompt, negative prompt, steps, guidance and scheduler,
and writes the image as raw f32 [H, W, 3] (--output). Prints one line per
pipeline; exits 1 when one differs.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

# goldens.json's scheduler names -> the executable's --scheduler names.
SCHEDULERS = {"ddim": "ddim", "pndm": "pndm", "euler": "euler",
              "euler-karras": "euler_karras", "euler-ancestral": "euler_a",
              "dpmpp-2m": "dpm++2m", "dpmpp-2m-karras": "dpm++2m_karras"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("executable")
    parser.add_argument("folder")
    parser.add_argument("--only", nargs="+", default=["txt2img-"])
    args = parser.parse_args()
    with open(os.path.join(args.folder, "goldens.json"), encoding="utf-8") as f:
        goldens = json.load(f)
    failed = 0
    for pipeline in goldens["pipelines"]:
        name = pipeline["name"]
        if not any(name.startswith(prefix) for prefix in args.only):
            continue
        scheduler = SCHEDULERS[pipeline["scheduler"]["name"]]
        output = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                              f"{os.getpid()}-{name}.f32")
        command = [args.executable, "--prompt", pipeline["prompt"],
                   "--negative-prompt", pipeline["negative_prompt"],
                   "--steps", str(pipeline["steps"]),
                   "--guidance", str(pipeline["guidance_scale"]),
                   "--seed", str(pipeline["seed"]),
                   "--scheduler", scheduler,
                   "--noise", os.path.join(args.folder, pipeline["latents"]),
                   "--output", output]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAILED: {name}: exit {run.returncode}: {run.stderr.strip()}")
            failed += 1
            continue
        image = np.fromfile(output, "<f4")
        os.remove(output)
        expected = np.fromfile(os.path.join(args.folder, pipeline["image"]),
                               "<f4")
        if image.size != expected.size:
            print(f"MISMATCH: {name}: {image.size} values, expected "
                  f"{expected.size}")
            failed += 1
            continue
        error = float(np.abs(image.astype(np.float64) - expected).max())
        ok = error <= 1e-3 and np.isfinite(image).all()
        print(f"{'OK' if ok else 'MISMATCH'}: {name} ({scheduler}, "
              f"{pipeline['steps']} steps): max abs error {error:.3g}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
