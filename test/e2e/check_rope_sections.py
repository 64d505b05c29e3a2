#!/usr/bin/env python3
"""Calls a compiled tfm.rope with sections (Inputs/weightless/rope.mlir:
sections 1, 2, 1 of a head of 8, theta 100, rotate_half) on random rows
and positions, against NumPy's transcription of Qwen2-VL's multimodal
RoPE (transformers 4.49's apply_multimodal_rotary_pos_emb: pair i rotates
by its section's position times theta^(-2i/8), i counted over all pairs).

    check_rope_sections.py LIBRARY"""
import sys

import numpy as np

import tfmc

model = tfmc.load(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.standard_normal((5, 2, 8)).astype(np.float32)
thw = rng.integers(0, 50, (5, 3)).astype(np.int32)
got = model.call("rope", x, thw.reshape(-1))["hidden_states"]
inverse = (1.0 / 100.0 ** (np.arange(0, 8, 2, dtype=np.float32) / 8)).astype(
    np.float32)
section = np.array([0, 1, 1, 2])
angles = (thw[:, section].astype(np.float32) * inverse).astype(np.float32)
angles = np.concatenate([angles, angles], axis=1)[:, None, :]
half = np.concatenate([-x[..., 4:], x[..., :4]], axis=-1)
expected = x * np.cos(angles) + half * np.sin(angles)
print("rows", got.shape[0], "within 1e-5 of NumPy:",
      bool(np.abs(got - expected).max() < 1e-5))
