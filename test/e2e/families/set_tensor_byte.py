#!/usr/bin/env python3
"""Copies a fixture directory and sets one byte of a tensor in its
model.safetensors (plain Python): NAME INDEX VALUE, byte INDEX of the
tensor's data, e.g. model.layers.0.mlp.experts.down_proj_scales 5 255 (an
MXFP4 exponent that is NaN), for the tests of corrupt checkpoints."""
import json
import shutil
import struct
import sys

source, target, name, index, value = sys.argv[1:]
shutil.rmtree(target, ignore_errors=True)
shutil.copytree(source, target)
path = f"{target}/model.safetensors"
with open(path, "r+b") as f:
    length = struct.unpack("<Q", f.read(8))[0]
    begin, end = json.loads(f.read(length))[name]["data_offsets"]
    assert 0 <= int(index) < end - begin, f"{name} has {end - begin} bytes"
    f.seek(8 + length + begin + int(index))
    f.write(bytes([int(value)]))
