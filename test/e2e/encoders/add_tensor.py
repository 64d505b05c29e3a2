#!/usr/bin/env python3
"""Copies a .safetensors file with one more f32 tensor of zeros:
add_tensor.py IN OUT NAME DIM[,DIM...] (safetensors is an 8-byte header
length, a JSON header and the data; no Python package needed)."""
import json
import struct
import sys


def main():
    source, target, name, dims = sys.argv[1:5]
    shape = [int(d) for d in dims.split(",")]
    with open(source, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    count = 1
    for d in shape:
        count *= d
    header[name] = {"dtype": "F32", "shape": shape,
                    "data_offsets": [len(data), len(data) + 4 * count]}
    data += b"\0" * (4 * count)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(target, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + data)


if __name__ == "__main__":
    main()
