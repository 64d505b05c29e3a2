#!/usr/bin/env python3
"""Writes the vision fixtures (test/e2e/vision/Inputs/<name>/: config.json +
model.safetensors, tiny random weights: 32x32 images, 8x8 patches) and
their goldens with transformers 4.40's model classes (../shared/reference):

- pixels.f32: a preprocessed image, little-endian f32 [3, 32, 32];
- vit.hidden.bin: ViTModel's last hidden state of it, f32 [17, 32];
- vit-classifier / deit-classifier / deit-teacher .logits.bin: the logits of
  ViTForImageClassification, DeiTForImageClassification and
  DeiTForImageClassificationWithTeacher, f32 [5].

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/vision/make_vision_goldens.py
"""
import os

import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=48, image_size=32, patch_size=8,
             num_channels=3)
LABELS = {i: name for i, name in
          enumerate(["tabby cat", "golden retriever", "teapot", "volcano",
                     "space shuttle"])}


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            scale = "layernorm" in name and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if scale else 0.3 * noise)


def save(name, model, seed):
    randomize(model, seed)
    model.eval().save_pretrained(os.path.join(OUT, name),
                                 safe_serialization=True)
    return model


def main():
    g = torch.Generator().manual_seed(5)
    pixels = torch.randn((1, 3, 32, 32), generator=g)
    pixels[0].numpy().astype("<f4").tofile(os.path.join(OUT, "pixels.f32"))
    with torch.no_grad():
        vit = save("vit", tf.ViTModel(tf.ViTConfig(**SIZES)), 1)
        hidden = vit(pixels).last_hidden_state[0]
        hidden.numpy().astype("<f4").tofile(os.path.join(OUT, "vit.hidden.bin"))
        print("vit: hidden", tuple(hidden.shape))
        for name, cls, config, seed in [
                ("vit-classifier", tf.ViTForImageClassification, tf.ViTConfig, 2),
                ("deit-classifier", tf.DeiTForImageClassification, tf.DeiTConfig, 3),
                ("deit-teacher", tf.DeiTForImageClassificationWithTeacher,
                 tf.DeiTConfig, 4)]:
            model = save(name, cls(config(**SIZES, id2label=LABELS,
                                          label2id={v: k for k, v in LABELS.items()})),
                         seed)
            logits = model(pixels).logits[0]
            logits.numpy().astype("<f4").tofile(
                os.path.join(OUT, name + ".logits.bin"))
            print(name, "logits", logits.numpy().round(3))


if __name__ == "__main__":
    main()
