#!/usr/bin/env python3
"""The sentence embedding sentence-transformers computes from hidden states,
by hand: pooled_golden.py HIDDEN.bin WIDTH MODE [--normalize] OUT.bin, where
HIDDEN.bin is a golden last hidden state (little-endian f32 [tokens, WIDTH],
from make_encoder_goldens.py), MODE is mean, cls or max (models.Pooling) and
--normalize divides by the L2 norm, at least 1e-12 (models.Normalize)."""
import math
import struct
import sys


def main():
    args = [a for a in sys.argv[1:] if a != "--normalize"]
    normalize = "--normalize" in sys.argv
    source, width, mode, target = args[0], int(args[1]), args[2], args[3]
    data = open(source, "rb").read()
    values = struct.unpack("<%df" % (len(data) // 4), data)
    rows = [values[i:i + width] for i in range(0, len(values), width)]
    if mode == "mean":
        pooled = [sum(r[j] for r in rows) / len(rows) for j in range(width)]
    elif mode == "cls":
        pooled = list(rows[0])
    elif mode == "max":
        pooled = [max(r[j] for r in rows) for j in range(width)]
    else:
        sys.exit("unknown mode " + mode)
    if normalize:
        norm = max(math.sqrt(sum(v * v for v in pooled)), 1e-12)
        pooled = [v / norm for v in pooled]
    open(target, "wb").write(struct.pack("<%df" % width, *pooled))


if __name__ == "__main__":
    main()
