#!/usr/bin/env python3
"""tfmc's side of bench/sd_bench.sh: a Stable Diffusion pipeline compiled
with `tfmc FOLDER --emit=lib -o libNAME.so`, timed through its entry
points (python/tfmc). Prints one JSON line.

    TFM_NUM_THREADS=N /usr/bin/python3 bench/sd_tfmc_calls.py libNAME.so \\
        [--steps 4] [--decodes 2] [--pipeline-steps 0]

A step is what the sampling loop (tfm_image_generate) does per step with
guidance: one @denoise call on a batch of two, the negative then the
positive prompt's keys and values (@text_keys_values of random text
states, computed once, as the loop computes them once per prompt), on the
same latents and timestep (as diffusers batches the two halves). A decode is @decode_latents of
one latent. Each is called once first (not timed: the first call maps the
weights' pages and sizes the buffers), then `--steps` steps and `--decodes`
decodes are timed one by one. Inputs are seeded normals of the shapes the
library's entry points declare.

--pipeline-steps N also runs Model.generate_image (the runtime's whole
loop: the tokenizer, @encode_text for both prompts, N Euler steps (one
guided @denoise call of both halves each, as stable-diffusion.cpp's run),
@decode_latents) and times its steps from the progress callback (the
first one's time is in pipeline_before_first_step_end_s, with the text
encoding), and the whole call: a check that the calls above time what the
loop does.

peak_rss_mb is the process's (getrusage), after everything above: the
mapped weights that were read, the runtime's buffers, Python and numpy.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import tfmc  # noqa: E402


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(function, runs):
    """The seconds of each of `runs` calls, and the last call's result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return times, result


def finite(what, values):
    """A benchmark of NaNs would time other code paths: refused."""
    if not np.isfinite(values).all():
        raise SystemExit(f"{what} gave values that are not finite")


def inputs_of(spec, rng):
    """Seeded inputs of an entry point's declared shapes: the timestep
    (a one-element f32) is 500, the rest standard normals."""
    out = []
    for tensor in spec["inputs"]:
        shape = tensor["shape"]
        if tensor["dtype"] != "f32":
            raise SystemExit(f"input {tensor['role']} is {tensor['dtype']}")
        if int(np.prod(shape)) == 1:
            out.append(np.full(shape, 500.0, np.float32))
        else:
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("library")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--decodes", type=int, default=2)
    parser.add_argument("--pipeline-steps", type=int, default=0)
    args = parser.parse_args()
    if args.steps < 1 or args.decodes < 1:
        parser.error("--steps and --decodes: at least 1")
    out = {"engine": "tfmc", "threads_env": os.environ.get("TFM_NUM_THREADS")}
    start = time.perf_counter()
    model = tfmc.load(args.library)
    out["load_s"] = time.perf_counter() - start
    out["rss_after_load_mb"] = rss_mb()
    entries = model.description["entry_points"]
    out["latent"] = model.description["latent_shape"]
    rng = np.random.default_rng(0)

    denoise = entries["denoise"]
    latents, timestep, _ = inputs_of(denoise, rng)
    (text,) = inputs_of(entries["text_keys_values"], rng)
    if timestep.size != 1 or text.shape[0] != 77:
        raise SystemExit(f"@denoise takes {[t['shape'] for t in denoise['inputs']]}: "
                         "not (latents, timestep, the text's keys and values)")
    negative = rng.standard_normal(text.shape).astype(np.float32)
    # The cross-attentions' keys and values, once per prompt as the
    # pipeline computes them (not part of a step).
    # One batch: the negative half, then the prompt's.
    keys_values = np.stack([
        next(iter(model.call("text_keys_values", states).values()))
        for states in (negative, text)])

    def step():
        (noise,) = model.call("denoise", latents, timestep,
                              keys_values).values()
        uncond, cond = noise[0], noise[1]
        return uncond + 7.5 * (cond - uncond)

    out["first_step_s"] = timed(step, 1)[0][0]
    out["step_s"], last = timed(step, args.steps)
    out["step_median_s"] = statistics.median(out["step_s"])
    out["rss_after_steps_mb"] = rss_mb()
    finite("a step", last)

    (z,) = inputs_of(entries["decode_latents"], rng)

    def decode():
        (image,) = model.call("decode_latents", z).values()
        return image

    out["first_decode_s"] = timed(decode, 1)[0][0]
    out["decode_s"], last = timed(decode, args.decodes)
    out["decode_median_s"] = statistics.median(out["decode_s"])
    finite("a decode", last)

    if args.pipeline_steps:
        marks = []
        start = time.perf_counter()
        image = model.generate_image(
            "a photo of an astronaut riding a horse", steps=args.pipeline_steps,
            seed=1, scheduler="euler",
            progress=lambda i, n: marks.append(time.perf_counter()))
        end = time.perf_counter()
        finite("generate_image", image)
        out["pipeline_s"] = end - start
        out["pipeline_step_s"] = [b - a for a, b in zip(marks, marks[1:])]
        out["pipeline_before_first_step_end_s"] = marks[0] - start
        out["pipeline_after_last_step_s"] = end - marks[-1]
    out["peak_rss_mb"] = rss_mb()
    model.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
