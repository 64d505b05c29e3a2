#!/usr/bin/env python3
"""Reads, checks or damages the weights appended to a compiled model
(runtime/include/tfm/tfm_format.h: the blob at a 2 MiB-aligned offset, then a trailer
"TFMWTS01", u64 offset, u64 size, u64 checksum). Without -o, prints what
the trailer says and exits non-zero if it is inconsistent; with -o, writes
a damaged copy (executable) for the loader's error tests."""
import argparse
import os
import struct
import sys

TRAILER = struct.Struct("<8sQQQ")
ALIGNMENT = 2 << 20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("-o", "--output")
    parser.add_argument("--truncate", type=int, help="drop this many final bytes")
    parser.add_argument("--trailer-size", type=int, help="rewrite the trailer's size")
    parser.add_argument("--flip-blob-byte", type=int, help="flip a byte of the blob")
    args = parser.parse_args()
    data = bytearray(open(args.model, "rb").read())
    magic, offset, size, checksum = TRAILER.unpack_from(data, len(data) - TRAILER.size)
    if not args.output:
        ok = (magic == b"TFMWTS01" and offset % ALIGNMENT == 0
              and offset + size == len(data) - TRAILER.size)
        print(f"trailer: offset % 2 MiB = {offset % ALIGNMENT}, blob ends "
              f"{'where the trailer starts' if offset + size == len(data) - TRAILER.size else 'elsewhere'}"
              f" ({size} bytes, magic {magic!r})")
        sys.exit(0 if ok else 1)
    if args.truncate:
        del data[len(data) - args.truncate:]
    if args.trailer_size is not None:
        TRAILER.pack_into(data, len(data) - TRAILER.size, magic, offset,
                          args.trailer_size, checksum)
    if args.flip_blob_byte is not None:
        data[offset + args.flip_blob_byte] ^= 1
    with open(args.output, "wb") as f:
        f.write(data)
    os.chmod(args.output, 0o755)


if __name__ == "__main__":
    main()
