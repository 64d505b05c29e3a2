#!/usr/bin/env python3
"""LLaVA's GGUF pair from Python (llava-gguf.test): tfmc.compile(text,
mmproj=...) and generate(images=[pixels]) give transformers 4.40's greedy
text (make_llava_goldens.py).

    check_gguf_python.py TEXT_GGUF MMPROJ_GGUF OUT_LIBRARY INPUTS"""
import sys

import numpy as np

import tfmc

text, mmproj, library, inputs = sys.argv[1:5]
model = tfmc.load(tfmc.compile(text, library, mmproj=mmproj, progress=False))
pixels = np.fromfile(f"{inputs}/pixels.f32", dtype="<f4").reshape(3, 32, 32)
with open(f"{inputs}/llava.ids.txt") as f:
    prompt = [int(t) for t in f.read().split()]
with open(f"{inputs}/llava.greedy.text", encoding="utf-8") as f:
    golden = f.read()[:-1]
print("python:", model.generate(prompt, images=[pixels], max_tokens=6) ==
      golden)
