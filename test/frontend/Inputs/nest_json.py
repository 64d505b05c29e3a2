#!/usr/bin/env python3
"""Sets one field of a JSON file (or of a safetensors file's header) to
arrays nested DEPTH deep, [[[...]]], written as text (Python's json
recurses too). Standard library only: it runs under lit's Python on CI.

  nest_json.py FILE KEY DEPTH      a JSON object file (created if absent)
  nest_json.py FILE.safetensors KEY DEPTH
  nest_json.py FILE KEY DEPTH --string   the brackets inside a string
                                         value, with an escaped quote
  nest_json.py FILE KEY DEPTH --objects  objects {"a": {"a": ... 1}}
"""
import json
import os
import struct
import sys

path, key, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
as_string = "--string" in sys.argv[4:]
objects = "--objects" in sys.argv[4:]
PLACEHOLDER = "@@nested@@"
if as_string:
    nested = "\"\\\"" + "[" * depth + "{\""
elif objects:
    nested = "{\"a\": " * depth + "1" + "}" * depth
else:
    nested = "[" * depth + "]" * depth

if path.endswith(".safetensors"):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header[key] = PLACEHOLDER
    text = json.dumps(header).replace(json.dumps(PLACEHOLDER), nested)
    text += " " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode() +
                data[8 + length:])
else:
    document = {}
    if os.path.exists(path):
        with open(path) as f:
            document = json.load(f)
    document[key] = PLACEHOLDER
    text = json.dumps(document).replace(json.dumps(PLACEHOLDER), nested)
    with open(path, "w") as f:
        f.write(text)
