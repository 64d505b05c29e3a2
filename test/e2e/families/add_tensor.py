#!/usr/bin/env python3
"""Copies a fixture directory and adds a zero tensor to its
model.safetensors (plain Python): NAME DTYPE SHAPE, e.g.
model.layers.0.mlp.experts.gate_up_proj_blocks U8 4,24,1,16, for the tests
of checkpoints tfmc refuses by what they hold."""
import json
import shutil
import struct
import sys

source, target, name, dtype, shape = sys.argv[1:]
shape = [int(d) for d in shape.split(",")]
size = {"U8": 1, "F32": 4, "BF16": 2}[dtype]
for d in shape:
    size *= d
shutil.rmtree(target, ignore_errors=True)
shutil.copytree(source, target)
path = f"{target}/model.safetensors"
with open(path, "rb") as f:
    length = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(length))
    data = f.read()
header[name] = {"dtype": dtype, "shape": shape,
                "data_offsets": [len(data), len(data) + size]}
encoded = json.dumps(header).encode()
encoded += b" " * (-len(encoded) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(encoded)) + encoded + data + bytes(size))
