#!/usr/bin/env python3
"""Overwrites bytes of a file in place: patch_bytes.py FILE OFFSET HEX."""
import sys

with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    f.write(bytes.fromhex(sys.argv[3]))
