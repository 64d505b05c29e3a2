#!/usr/bin/env python3
"""Writes the Swin fixtures (test/e2e/vision/Inputs/swin/ and
swin-base/: config.json, model.safetensors, preprocessor_config.json;
tiny random weights: 32x32 images in 2x2 patches, three stages of 16x16,
8x8 and 4x4 tokens with 4x4 windows, so that the last stage's window is
the whole grid and is not shifted) and their goldens with transformers
4.40's classes (../shared/reference):

- swin.logits.bin: SwinForImageClassification's logits [5] of
  swin-pixels.f32 (f32 [3, 32, 32] from a seed);
- swin.photo.logits.bin: the same of Inputs/images/photo.png through
  ViTImageProcessor (resized to 32x32, bicubic, ImageNet's mean and std);
- swin-base.hidden.bin: SwinModel's last hidden state [16, 64] of
  swin-pixels.f32.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/vision/make_swin_goldens.py
"""
import json
import os

import torch
import transformers as tf
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
CONFIG = dict(image_size=32, patch_size=2, num_channels=3, embed_dim=16,
              depths=[2, 2, 2], num_heads=[2, 2, 4], window_size=4,
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
              drop_path_rate=0.0)
PREPROCESSOR = {"do_normalize": True, "do_resize": True,
                "image_mean": [0.485, 0.456, 0.406],
                "image_processor_type": "ViTImageProcessor",
                "image_std": [0.229, 0.224, 0.225], "resample": 3,
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
    g = torch.Generator().manual_seed(3)
    pixels = torch.randn((1, 3, 32, 32), generator=g)
    write("swin-pixels.f32", pixels[0])
    labels = {i: name for i, name in enumerate(
        ["tabby", "tiger", "lynx", "puma", "leopard"])}
    model = save("swin", tf.SwinForImageClassification(tf.SwinConfig(
        **CONFIG, architectures=["SwinForImageClassification"],
        id2label=labels)), 31)
    processor = tf.ViTImageProcessor(**{k: v for k, v in PREPROCESSOR.items()
                                        if k != "image_processor_type"})
    photo = processor(Image.open(os.path.join(OUT, "images", "photo.png")),
                      return_tensors="pt").pixel_values
    with torch.no_grad():
        write("swin.logits.bin", model(pixel_values=pixels).logits[0])
        write("swin.photo.logits.bin", model(pixel_values=photo).logits[0])
    base = save("swin-base", tf.SwinModel(tf.SwinConfig(
        **CONFIG, architectures=["SwinModel"])), 32)
    with torch.no_grad():
        write("swin-base.hidden.bin",
              base(pixel_values=pixels).last_hidden_state[0])


if __name__ == "__main__":
    main()
