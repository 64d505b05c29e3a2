#!/usr/bin/env python3
"""Draft models for speculative decoding's tests, made from a Hugging Face
Llama folder with NumPy (no torch):

    make_drafts.py BASE OUT

  OUT/shallow   BASE without its last layer (a layer-skipping draft):
                its guesses agree with BASE's some of the time;
  OUT/blind     BASE with its final norm's weights zero: every logit is 0,
                so its guess is always token 0 (<unk>), which BASE never
                chooses: drafts that never agree;
  OUT/renamed   BASE with one tokenizer piece respelled ("▁Lily" as
                "▁Lilz"): another vocabulary, refused by name.
"""
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from checkpoint import Stored, read_safetensors, write_safetensors  # noqa: E402


def copy_folder(base, out, tensors=None, config=None):
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(base):
        shutil.copy(os.path.join(base, name), out)
        os.chmod(os.path.join(out, name), 0o644)
    if tensors is not None:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    if config is not None:
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(config, f, indent=2)


def main():
    base, out = sys.argv[1:3]
    tensors = read_safetensors(os.path.join(base, "model.safetensors"))
    with open(os.path.join(base, "config.json")) as f:
        config = json.load(f)

    layers = config["num_hidden_layers"] - 1
    shallow = {k: v for k, v in tensors.items()
               if not k.startswith("model.layers.") or
               int(k.split(".")[2]) < layers}
    copy_folder(base, os.path.join(out, "shallow"), shallow,
                dict(config, num_hidden_layers=layers))

    blind = dict(tensors)
    norm = tensors["model.norm.weight"]
    blind["model.norm.weight"] = Stored(norm.dtype, np.zeros_like(norm.data))
    copy_folder(base, os.path.join(out, "blind"), blind)

    renamed = os.path.join(out, "renamed")
    copy_folder(base, renamed)
    path = os.path.join(renamed, "tokenizer.model")
    with open(path, "rb") as f:
        model = f.read()
    piece = "\u2581Lily".encode()
    assert model.count(piece) == 1, "the piece to respell is not unique"
    with open(path, "wb") as f:
        f.write(model.replace(piece, "\u2581Lilz".encode()))


if __name__ == "__main__":
    main()
