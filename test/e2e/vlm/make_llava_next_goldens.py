#!/usr/bin/env python3
"""Writes the LLaVA-NeXT fixture (test/e2e/vlm/Inputs/llava-next/: the
llava fixture's shapes, make_llava_goldens.py, as a llava_next model whose
32 px tiles take image_grid_pinpoints scaled from llava-v1.6's 336 px
ones) and its goldens with transformers 4.40's LlavaNextImageProcessor and
LlavaNextForConditionalGeneration (../shared/reference).

For each image, IMAGES below (photo.png wide, gray.png tall, wide.png,
written here, whose fitted height is one pixel short of its pinpoint):
- next-<image>.tiles.bin: the processor's pixel_values [tiles, 3, 32, 32]
  (the whole image squashed, then the pinpoint's tiles row by row);
- next-<image>.rows.bin: the image's tokens [rows, 64] as the model lays
  them out (the whole image's, then the tiles' grid unpadded with
  image_newline after each row), recorded where the model merges them
  into the prompt;
- next-<image>.logits.bin: the last position's logits [1, vocab] of
  llava.ids.txt's prompt with the image;
- next-photo.greedy.txt: the greedy continuation's ids (NEW tokens).

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/vlm/make_llava_next_goldens.py
"""
import json
import os
import shutil

import numpy as np
import torch
import transformers as tf
from PIL import Image

import make_llava_goldens as llava

HERE = llava.HERE
OUT = llava.OUT
NAME = "llava-next"
PINPOINTS = [[32, 64], [64, 32], [64, 64], [96, 32], [32, 96]]
IMAGES = {
    "photo": os.path.join(HERE, "..", "vision", "Inputs", "images",
                          "photo.png"),
    "gray": os.path.join(HERE, "..", "vision", "Inputs", "images",
                         "gray.png"),
    "wide": os.path.join(OUT, "wide.png"),
}
NEW = 6


def write_wide_image(path):
    """100 x 30 RGB noise: (32, 96) fits it best, 96 x 29 after resizing,
    padded to 31 rows (one short of the pinpoint)."""
    rng = np.random.default_rng(5)
    pixels = rng.integers(0, 256, size=(30, 100, 3), dtype=np.uint8)
    Image.fromarray(pixels, "RGB").save(path)


def main():
    directory = os.path.join(OUT, NAME)
    write_wide_image(IMAGES["wide"])
    fields = dict(llava.FIXTURES["llava"])
    fields["text_config"] = dict(fields["text_config"],
                                 max_position_embeddings=256)
    config = tf.LlavaNextConfig(image_grid_pinpoints=PINPOINTS, **fields)
    model = tf.LlavaNextForConditionalGeneration(config).eval()
    llava.randomize(model, 3)
    model.save_pretrained(directory, safe_serialization=True)
    preprocessor = dict(llava.PREPROCESSOR,
                        image_processor_type="LlavaNextImageProcessor",
                        image_grid_pinpoints=PINPOINTS)
    with open(os.path.join(directory, "preprocessor_config.json"), "w") as f:
        json.dump(preprocessor, f, indent=2)
    # The llava fixture's tokenizer (its SentencePiece model stays in
    # ../shared: tests copy it in).
    for name in ("added_tokens.json", "special_tokens_map.json",
                 "tokenizer_config.json"):
        shutil.copy(os.path.join(OUT, "llava", name), directory)
    processor = tf.LlavaNextImageProcessor(**{
        k: v for k, v in preprocessor.items()
        if k != "image_processor_type"})
    with open(os.path.join(OUT, "llava.ids.txt")) as f:
        ids = torch.tensor([[int(t) for t in f.read().split()]])
    mask = torch.ones_like(ids)

    # The laid-out image tokens, as the model hands them to the merge.
    merged = []
    merge = model._merge_input_ids_with_image_features

    def record(image_features, *args, **kwargs):
        merged.append(image_features.detach().clone())
        return merge(image_features, *args, **kwargs)

    model._merge_input_ids_with_image_features = record
    for name, path in IMAGES.items():
        image = Image.open(path)
        inputs = processor(image, return_tensors="pt")
        llava.write(f"next-{name}.tiles.bin", inputs.pixel_values[0])
        print("  image size", inputs.image_sizes[0].tolist())
        with torch.no_grad():
            merged.clear()
            logits = model(input_ids=ids, pixel_values=inputs.pixel_values,
                           image_sizes=inputs.image_sizes,
                           attention_mask=mask).logits
            llava.write(f"next-{name}.rows.bin", merged[0][0])
            llava.write(f"next-{name}.logits.bin", logits[0, -1:])
            if name == "photo":
                out = model.generate(input_ids=ids,
                                     pixel_values=inputs.pixel_values,
                                     image_sizes=inputs.image_sizes,
                                     attention_mask=mask,
                                     max_new_tokens=NEW, do_sample=False)
                greedy = out[0, -NEW:].tolist()
                with open(os.path.join(OUT, "next-photo.greedy.txt"),
                          "w") as f:
                    f.write(" ".join(str(t) for t in greedy) + "\n")
                print("next-photo.greedy.txt", greedy)


if __name__ == "__main__":
    main()
