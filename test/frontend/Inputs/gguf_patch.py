#!/usr/bin/env python3
"""Overwrites one field of a GGUF file (version 2 or 3, little endian) in
place, found by walking its header as a reader does. Standard library
only: it runs under lit's Python on CI.

  gguf_patch.py FILE scale TENSOR BLOCK BYTE HEX
      the bytes HEX at byte BYTE of block BLOCK of tensor TENSOR's data
      (a Q5_K block's d is at byte 0, its dmin at byte 2)
  gguf_patch.py FILE array-count KEY COUNT
      the element count of metadata array KEY (its elements stay)
"""
import struct
import sys

SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8,
                12: 8}
BLOCKS = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18),
          "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24),
          "Q8_0": (8, 32, 34), "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110),
          "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176),
          "Q6_K": (14, 256, 210), "BF16": (30, 1, 2), "MXFP4": (39, 32, 17)}
BLOCK_BYTES = {code: size for code, _, size in BLOCKS.values()}


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def string(self):
        length = self.take("Q")
        text = self.data[self.at:self.at + length].decode("utf-8", "replace")
        self.at += length
        return text

    def skip_value(self, value_type):
        if value_type == 8:
            self.string()
        elif value_type == 9:
            element_type, count = self.take("IQ")
            for _ in range(count):
                self.skip_value(element_type)
        else:
            self.at += SCALAR_BYTES[value_type]


def main():
    path, command, *args = sys.argv[1:]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    reader = Reader(data)
    _, _, tensor_count, pair_count = reader.take("IIQQ")
    alignment, where = 32, None
    for _ in range(pair_count):
        key = reader.string()
        value_type = reader.take("I")
        if command == "array-count" and key == args[0]:
            assert value_type == 9, f"{key} is not an array"
            where = reader.at + 4
        if key == "general.alignment":
            alignment = struct.unpack_from("<I", data, reader.at)[0]
        reader.skip_value(value_type)
    tensors = {}
    for _ in range(tensor_count):
        name = reader.string()
        rank = reader.take("I")
        reader.at += 8 * rank
        ggml_type, offset = reader.take("IQ")
        tensors[name] = (ggml_type, offset)
    data_start = -(-reader.at // alignment) * alignment
    if command == "scale":
        name, block, byte, patch = args
        ggml_type, offset = tensors[name]
        where = (data_start + offset + int(block) * BLOCK_BYTES[ggml_type] +
                 int(byte))
        data[where:where + len(bytes.fromhex(patch))] = bytes.fromhex(patch)
    elif command == "array-count":
        assert where is not None, f"no metadata array {args[0]}"
        data[where:where + 8] = struct.pack("<Q", int(args[1]))
    else:
        sys.exit(f"unknown command {command}")
    with open(path, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
