"""Hugging Face checkpoints written with NumPy alone (the tests that make
their fixtures at run time have no torch): safetensors files of F32, BF16,
U8 and I64 tensors, and bfloat16 rounding as torch's .to(torch.bfloat16)
does it (round to nearest, ties to even), so that a reference can multiply
exactly the values tfmc reads."""

import json
import struct

import numpy as np


def bf16_bits(x):
    """float values -> their bfloat16 bit patterns (uint16), rounded to
    nearest even as torch rounds."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    return b.astype(np.uint16)


def bf16_values(bits):
    """bfloat16 bit patterns -> float64 values."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)
    return wide.view(np.float32).astype(np.float64)


class Stored:
    """A tensor as a checkpoint stores it: `dtype` one of safetensors' names
    and `data` an array whose bytes are the stored ones."""

    def __init__(self, dtype, data):
        self.dtype, self.data = dtype, np.ascontiguousarray(data)


def as_bf16(values):
    return Stored("BF16", bf16_bits(values))


def as_f32(values):
    return Stored("F32", np.asarray(values, dtype="<f4"))


def stored_values(tensor):
    """The float64 values a Stored float tensor holds."""
    if tensor.dtype == "BF16":
        return bf16_values(tensor.data)
    return tensor.data.astype(np.float64)


def write_safetensors(path, tensors):
    """`tensors`: name -> Stored. The header lists them by name, each one's
    bytes in that order, the header padded with spaces to 8 bytes."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        raw = t.data.tobytes()
        header[name] = {"dtype": t.dtype, "shape": list(t.data.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def read_safetensors(path):
    """name -> Stored for every F32 and BF16 tensor of a .safetensors file."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    dtypes = {"F32": "<f4", "BF16": "<u2"}
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        values = np.frombuffer(data[begin:end], dtype=dtypes[entry["dtype"]])
        tensors[name] = Stored(entry["dtype"], values.reshape(entry["shape"]))
    return tensors
