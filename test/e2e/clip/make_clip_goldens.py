#!/usr/bin/env python3
"""Writes the CLIP fixtures (test/e2e/clip/Inputs/<name>/: config.json,
model.safetensors, preprocessor_config.json; tiny random weights: a
64-token vocabulary, 32x32 images in 8x8 patches) and their goldens with
transformers 4.40's model classes (../shared/reference):

- clip: CLIPModel whose text config says eos_token_id 2, as the first
  checkpoints' do (pooled at the largest id);
- clip-text: CLIPTextModelWithProjection pooling at eos_token_id 62's first
  position;
- clip-vision: CLIPVisionModel (no projection).

Goldens, little-endian f32: <name>.text.hidden.bin [7, 32] and
<name>.text.embeds.bin (the projection's [24], or the pooled [32]) of the
ids in IDS; <name>.image.hidden.bin [17, 32] and <name>.image.embeds.bin of
pixels.f32 [3, 32, 32]; clip.photo.embeds.bin: CLIPImageProcessor's
preprocessing of ../vision/Inputs/images/photo.png (shortest edge 32,
bicubic, center crop 32) through CLIPModel's image tower.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/clip/make_clip_goldens.py
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
            max_position_embeddings=16, projection_dim=24)
VISION = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, image_size=32, patch_size=8,
              projection_dim=24)
# ids with an end-of-text 62 before the end, and the largest id 63 too:
# the two poolings pick different rows.
IDS = [0, 17, 62, 5, 63, 12, 62]
PREPROCESSOR = {"crop_size": 32, "do_center_crop": True, "do_normalize": True,
                "do_resize": True, "image_processor_type": "CLIPImageProcessor",
                "image_mean": [0.48145466, 0.4578275, 0.40821073],
                "image_std": [0.26862954, 0.26130258, 0.27577711],
                "resample": 3, "size": 32}


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            scale = "norm" in name and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if scale else 0.3 * noise)


def save(name, model, seed, images=True):
    randomize(model, seed)
    directory = os.path.join(OUT, name)
    model.eval().save_pretrained(directory, safe_serialization=True)
    if images:
        with open(os.path.join(directory, "preprocessor_config.json"),
                  "w") as f:
            json.dump(PREPROCESSOR, f, indent=2)
    return model


def write(name, tensor):
    tensor.detach().numpy().astype("<f4").tofile(os.path.join(OUT, name))
    print(name, tuple(tensor.shape))


def main():
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(7)
    pixels = torch.randn((1, 3, 32, 32), generator=g)
    write("pixels.f32", pixels[0])
    ids = torch.tensor([IDS])
    with torch.no_grad():
        clip = save("clip", tf.CLIPModel(tf.CLIPConfig(
            text_config=dict(TEXT, eos_token_id=2),
            vision_config=VISION, projection_dim=24)), 1)
        text = clip.text_model(input_ids=ids)
        write("clip.text.hidden.bin", text.last_hidden_state[0])
        write("clip.text.embeds.bin", clip.get_text_features(input_ids=ids)[0])
        image = clip.vision_model(pixel_values=pixels)
        write("clip.image.hidden.bin", image.last_hidden_state[0])
        write("clip.image.embeds.bin",
              clip.get_image_features(pixel_values=pixels)[0])
        processor = tf.CLIPImageProcessor(**PREPROCESSOR)
        photo = Image.open(os.path.join(HERE, "..", "vision", "Inputs",
                                        "images", "photo.png"))
        processed = processor(photo, return_tensors="pt").pixel_values
        write("clip.photo.embeds.bin",
              clip.get_image_features(pixel_values=processed)[0])

        text_only = save("clip-text", tf.CLIPTextModelWithProjection(
            tf.CLIPTextConfig(**TEXT, eos_token_id=62)), 2, images=False)
        out = text_only(input_ids=ids)
        write("clip-text.text.hidden.bin", out.last_hidden_state[0])
        write("clip-text.text.embeds.bin", out.text_embeds[0])

        vision = save("clip-vision", tf.CLIPVisionModel(
            tf.CLIPVisionConfig(**VISION)), 3)
        out = vision(pixel_values=pixels)
        write("clip-vision.image.hidden.bin", out.last_hidden_state[0])
        write("clip-vision.image.embeds.bin", out.pooler_output[0])


if __name__ == "__main__":
    main()
