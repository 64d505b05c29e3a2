#!/usr/bin/env python3
"""Runs a compiled Stable Diffusion executable for each whole pipeline of
Inputs/NAME/goldens.json (text-to-image, image-to-image, inpainting;
`--only PREFIX` picks some) and compares its image with diffusers' within
1e-3:

    check_sd_images.py EXECUTABLE Inputs/NAME [--only PREFIX...]

Each run starts from the golden's initial latents (--noise, diffusers'
`latents=`) or image (--init-image, --strength, --mask) and seed (the
generator the VAE's samples and Euler ancestral's noise are drawn from),
with the golden's prompt, negative prompt (left out where it is null),
steps, guidance and scheduler,
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


def generate_in_python(library, folder, pipeline, scheduler):
    """The same run through the Python package's Model.generate_image."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "..", "python"))
    import tfmc
    height, width = pipeline["height"], pipeline["width"]
    arguments = dict(negative_prompt=pipeline["negative_prompt"],
                     steps=pipeline["steps"],
                     guidance=pipeline["guidance_scale"],
                     seed=pipeline["seed"], scheduler=scheduler)
    if "latents" in pipeline:
        arguments["noise"] = np.fromfile(
            os.path.join(folder, pipeline["latents"]), "<f4").reshape(
                4, height // 8, width // 8)
    if "init_image" in pipeline:
        # The PNG's pixels as the executable reads them: the golden
        # pixels file beside it holds [3, H, W] in [-1, 1].
        pixels = np.fromfile(os.path.join(folder, pipeline["init_image"][
            :-len(".png")] + ".pixels.bin"), "<f4").reshape(3, height, width)
        arguments["init_image"] = ((pixels + 1) / 2).transpose(1, 2, 0)
        arguments["strength"] = pipeline.get("strength")
    steps_seen = []
    arguments["progress"] = lambda step, steps: steps_seen.append(step)
    with tfmc.load(library) as model:
        image = model.generate_image(pipeline["prompt"], **arguments)
    return image.reshape(-1), steps_seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", metavar="LIBRARY",
                        help="run through Model.generate_image of LIBRARY "
                             "(tfmc --emit=lib) instead of an executable")
    parser.add_argument("executable")
    parser.add_argument("folder")
    parser.add_argument("--only", nargs="+", default=[""])
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
        # A null negative prompt is left out (SDXL: zeros).
        command = [args.executable, "--prompt", pipeline["prompt"]]
        if pipeline["negative_prompt"] is not None:
            command += ["--negative-prompt", pipeline["negative_prompt"]]
        command += ["--steps", str(pipeline["steps"]),
                   "--guidance", str(pipeline["guidance_scale"]),
                   "--seed", str(pipeline["seed"]),
                   "--scheduler", scheduler, "--output", output]
        # Text-to-image and inpainting start from the golden's latents;
        # image-to-image and inpainting from its image (and mask).
        if "latents" in pipeline:
            command += ["--noise", os.path.join(args.folder,
                                                pipeline["latents"])]
        if "init_image" in pipeline:
            command += ["--init-image", os.path.join(args.folder,
                                                     pipeline["init_image"])]
        if "strength" in pipeline:
            command += ["--strength", str(pipeline["strength"])]
        if "mask_image" in pipeline:
            command += ["--mask", os.path.join(args.folder,
                                               pipeline["mask_image"])]
        if args.python:
            image, steps = generate_in_python(args.python, args.folder,
                                              pipeline, scheduler)
            print(f"progress: {steps}")
        else:
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"FAILED: {name}: exit {run.returncode}: "
                      f"{run.stderr.strip()}")
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
