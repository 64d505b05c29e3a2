#!/usr/bin/env python3
"""Writes the image-file fixtures and goldens (test/e2e/vision/Inputs/):

- images/: photo.png (RGB 45x37), photo.jpg (the same, JPEG quality 90),
  gray.png (8-bit gray), rgba.png (RGB with alpha), gray16.png (16-bit
  gray, values 0 to 600: Pillow clips them at 255), rgb16.png (16-bit RGB,
  written here as Pillow cannot: Pillow keeps each sample's high byte):
  small patterned images that every resampling filter changes;
- preprocessor_config.json beside the fixtures' config.json, saved by
  transformers 4.40's image processors: vit-classifier ViTImageProcessor
  (32x32, bilinear), deit-classifier DeiTImageProcessor (40x40 bicubic,
  center crop 32x32, ImageNet mean and std), deit-teacher ViTImageProcessor
  with Lanczos, vit ViTImageProcessor with nearest;
- <model>.<image>.pixels.f32: the processor's pixel_values of
  Image.open(image).convert("RGB"), little-endian f32 [3, 32, 32];
- <model>.<image>.logits.bin: the classifier's logits of those pixels.

Regenerate with (python3-pil from Debian)

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/vision/make_image_goldens.py
"""
import os
import struct
import zlib

import numpy as np
import torch
import transformers as tf
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
IMAGES = os.path.join(OUT, "images")


def pattern(width, height, seed):
    """Gradients, stripes and noise: detail at every scale."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    r = 255 * x / (width - 1)
    g = 127.5 + 127.5 * np.sin(x * 0.9 + y * 0.4)
    b = 255 * ((x // 3 + y // 5) % 2)
    rgb = np.stack([r, g, b], axis=-1) + rng.normal(0, 20, (height, width, 3))
    return np.clip(rgb, 0, 255).astype(np.uint8)


def write_images():
    os.makedirs(IMAGES, exist_ok=True)
    photo = Image.fromarray(pattern(45, 37, 1), "RGB")
    photo.save(os.path.join(IMAGES, "photo.png"))
    photo.save(os.path.join(IMAGES, "photo.jpg"), quality=90)
    Image.fromarray(pattern(20, 28, 2)[:, :, 1], "L").save(
        os.path.join(IMAGES, "gray.png"))
    rgba = np.concatenate([pattern(33, 33, 3),
                           pattern(33, 33, 4)[:, :, :1]], axis=-1)
    Image.fromarray(rgba, "RGBA").save(os.path.join(IMAGES, "rgba.png"))
    gray16 = (pattern(23, 19, 5)[:, :, 0].astype(np.uint16) * 600) // 255
    Image.fromarray(gray16, "I;16").save(os.path.join(IMAGES, "gray16.png"))
    rgb16 = pattern(27, 21, 6).astype(np.uint16) * 257 + 3
    write_png16(os.path.join(IMAGES, "rgb16.png"), rgb16)


def write_png16(path, rgb):
    """A 16-bit RGB PNG: IHDR, one zlib IDAT of unfiltered big-endian rows,
    IEND."""
    height, width, _ = rgb.shape
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(
            ">I", zlib.crc32(body) & 0xFFFFFFFF)
    rows = b"".join(b"\0" + rgb[y].astype(">u2").tobytes() for y in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows, 9)))
        f.write(chunk(b"IEND", b""))


PROCESSORS = {
    "vit-classifier": tf.ViTImageProcessor(size={"height": 32, "width": 32}),
    "deit-classifier": tf.DeiTImageProcessor(
        size={"height": 40, "width": 40},
        crop_size={"height": 32, "width": 32}),
    "deit-teacher": tf.ViTImageProcessor(size={"height": 32, "width": 32},
                                         resample=1),
    "vit": tf.ViTImageProcessor(size={"height": 32, "width": 32}, resample=0),
}
GOLDENS = [  # (model, image, logits too)
    ("vit-classifier", "photo.png", True),
    ("vit-classifier", "photo.jpg", True),
    ("vit-classifier", "gray.png", False),
    ("vit-classifier", "rgba.png", False),
    ("vit-classifier", "gray16.png", False),
    ("vit-classifier", "rgb16.png", False),
    ("deit-classifier", "photo.png", True),
    ("deit-classifier", "photo.jpg", False),
    ("deit-teacher", "photo.png", False),
    ("vit", "photo.png", False),
]


def main():
    write_images()
    for name, processor in PROCESSORS.items():
        processor.save_pretrained(os.path.join(OUT, name))
    for name, image, logits in GOLDENS:
        rgb = Image.open(os.path.join(IMAGES, image)).convert("RGB")
        pixels = PROCESSORS[name](rgb, return_tensors="pt").pixel_values
        stem = os.path.join(OUT, f"{name}.{image}")
        pixels[0].numpy().astype("<f4").tofile(stem + ".pixels.f32")
        if logits:
            cls = (tf.DeiTForImageClassification if name.startswith("deit")
                   else tf.ViTForImageClassification)
            model = cls.from_pretrained(os.path.join(OUT, name)).eval()
            with torch.no_grad():
                out = model(pixels).logits[0]
            out.numpy().astype("<f4").tofile(stem + ".logits.bin")
            print(name, image, "logits", out.numpy().round(3))
        print(name, image, "pixels", tuple(pixels.shape[1:]))


if __name__ == "__main__":
    main()
