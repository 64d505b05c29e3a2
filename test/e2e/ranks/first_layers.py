"""Copies a Hugging Face folder keeping its first N layers: the config's
num_hidden_layers set to N, the safetensors without the tensors of layers
N and above, every other file as it is. A published checkpoint whose layer
count a test's split does not divide (stories260K's 5) then gives a model
of a count it does, with the checkpoint's tokenizer, embeddings and head.

    first_layers.py SOURCE_DIR N OUT_DIR
"""
import json
import os
import re
import shutil
import struct
import sys


def main():
    source, layers, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(source):
        if name not in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(source, name), out)
    with open(os.path.join(source, "config.json")) as f:
        config = json.load(f)
    if config["num_hidden_layers"] < layers:
        sys.exit(f"{source} has {config['num_hidden_layers']} layers, "
                 f"not {layers}")
    config["num_hidden_layers"] = layers
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    with open(os.path.join(source, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    kept, chunks, offset = {}, [], 0
    for name, info in sorted(header.items(),
                             key=lambda kv: kv[1].get("data_offsets", [0])[0]):
        if name == "__metadata__":
            kept[name] = info
            continue
        layer = re.search(r"\.layers\.(\d+)\.", name)
        if layer and int(layer.group(1)) >= layers:
            continue
        begin, end = info["data_offsets"]
        chunks.append(data[begin:end])
        kept[name] = dict(info, data_offsets=[offset, offset + end - begin])
        offset += end - begin
    encoded = json.dumps(kept).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for chunk in chunks:
            f.write(chunk)


if __name__ == "__main__":
    main()
