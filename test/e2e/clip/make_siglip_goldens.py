#!/usr/bin/env python3
"""Writes the SigLIP fixtures (test/e2e/clip/Inputs/<name>/: config.json,
model.safetensors, preprocessor_config.json; tiny random weights: a
64-token vocabulary, 32x32 images in 8x8 patches) and their goldens with
transformers 4.40's model classes (../shared/reference):

- siglip: SiglipModel (the text tower attending both ways, pooled at its
  last row through its head; the image tower without a class token,
  pooled by attention from a learned probe);
- siglip-vision: SiglipVisionModel.

Goldens, little-endian f32: <name>.text.hidden.bin [7, 32] and
<name>.text.embeds.bin [32] of the ids in IDS; <name>.image.hidden.bin
[16, 32] and <name>.image.embeds.bin [32] of ../Inputs/pixels.f32
(make_clip_goldens.py's [3, 32, 32]); siglip.photo.embeds.bin:
SiglipImageProcessor's preprocessing of ../vision/Inputs/images/photo.png
(resized to 32x32, bicubic, mean and std 0.5) through the image tower.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/clip/make_siglip_goldens.py
"""
import json
import os

import numpy as np
import torch
import transformers as tf
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
TEXT = dict(vocab_size=64, hidden_size=32, intermediate_size=48,
            num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=16)
VISION = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, image_size=32, patch_size=8)
IDS = [0, 17, 62, 5, 63, 12, 1]
PREPROCESSOR = {"do_normalize": True, "do_rescale": True, "do_resize": True,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                "image_processor_type": "SiglipImageProcessor",
                "resample": 3, "rescale_factor": 0.00392156862745098,
                "size": {"height": 32, "width": 32}}


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            scale = "norm" in name and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if scale else 0.3 * noise)


def save(name, model, seed):
    randomize(model, seed)
    directory = os.path.join(OUT, name)
    model.eval().save_pretrained(directory, safe_serialization=True)
    with open(os.path.join(directory, "preprocessor_config.json"), "w") as f:
        json.dump(PREPROCESSOR, f, indent=2)
    return model


def write(name, tensor):
    tensor.detach().numpy().astype("<f4").tofile(os.path.join(OUT, name))
    print(name, tuple(tensor.shape))


def main():
    pixels = torch.from_numpy(np.fromfile(
        os.path.join(OUT, "pixels.f32"), dtype="<f4").reshape(1, 3, 32, 32))
    ids = torch.tensor([IDS])
    with torch.no_grad():
        siglip = save("siglip", tf.SiglipModel(tf.SiglipConfig(
            text_config=TEXT, vision_config=VISION)), 1)
        text = siglip.text_model(input_ids=ids)
        write("siglip.text.hidden.bin", text.last_hidden_state[0])
        write("siglip.text.embeds.bin", text.pooler_output[0])
        image = siglip.vision_model(pixel_values=pixels)
        write("siglip.image.hidden.bin", image.last_hidden_state[0])
        write("siglip.image.embeds.bin", image.pooler_output[0])
        processor = tf.SiglipImageProcessor(**PREPROCESSOR)
        photo = Image.open(os.path.join(HERE, "..", "vision", "Inputs",
                                        "images", "photo.png"))
        processed = processor(photo, return_tensors="pt").pixel_values
        write("siglip.photo.embeds.bin",
              siglip.vision_model(pixel_values=processed).pooler_output[0])

        vision = save("siglip-vision", tf.SiglipVisionModel(
            tf.SiglipVisionConfig(**VISION)), 2)
        out = vision(pixel_values=pixels)
        write("siglip-vision.image.hidden.bin", out.last_hidden_state[0])
        write("siglip-vision.image.embeds.bin", out.pooler_output[0])


if __name__ == "__main__":
    main()
