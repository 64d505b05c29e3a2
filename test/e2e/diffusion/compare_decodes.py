#!/usr/bin/env python3
"""Runs @decode_latents of two compiled pipelines on the same random
latents (numpy, seed 0) and prints their largest difference, failing past
`--tol`:

    compare_decodes.py LIB_A LIB_B [--tol 1e-4]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python"))
import tfmc  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--tol", type=float, default=1e-4)
    args = parser.parse_args()
    outputs = []
    for path in (args.first, args.second):
        with tfmc.load(path) as model:
            shape = model.description["latent_shape"]
            latents = np.random.default_rng(0).standard_normal(
                shape).astype(np.float32)
            outputs.append(model.call("decode_latents", latents)[
                "hidden_states"].copy())
    error = float(np.abs(outputs[0].astype(np.float64) - outputs[1]).max())
    ok = error <= args.tol and outputs[0].shape == outputs[1].shape
    print(f"{'OK' if ok else 'MISMATCH'}: @decode_latents {list(outputs[0].shape)}: "
          f"max abs difference {error:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
