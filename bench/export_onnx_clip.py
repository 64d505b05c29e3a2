#!/usr/bin/env python3
"""Exports a compare_clip.py model (a random CLIPModel directory) to ONNX
for the ONNX Runtime peer: its image tower as get_image_features
(pixel_values [batch, 3, 224, 224]) and its text tower as
get_text_features (input_ids and attention_mask [batch, sequence], int64),
with transformers' own class (eager attention).

    source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 export_onnx_clip.py MODEL_DIR IMAGE.onnx TEXT.onnx
"""
import sys

import torch
import transformers as tf


class ImageFeatures(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model.get_image_features(pixel_values=pixel_values)


class TextFeatures(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model.get_text_features(input_ids=input_ids,
                                            attention_mask=attention_mask)


def main():
    directory, image_out, text_out = sys.argv[1:4]
    config = tf.CLIPConfig.from_pretrained(directory)
    config._attn_implementation = "eager"
    model = tf.CLIPModel.from_pretrained(directory, config=config).eval()
    with torch.no_grad():
        torch.onnx.export(ImageFeatures(model), (torch.rand(1, 3, 224, 224),),
                          image_out, input_names=["pixel_values"],
                          output_names=["image_embeds"],
                          dynamic_axes={"pixel_values": {0: "batch"}},
                          opset_version=14)
        ids = torch.arange(1000, 1077).unsqueeze(0)
        names = ["input_ids", "attention_mask"]
        torch.onnx.export(TextFeatures(model), (ids, torch.ones_like(ids)),
                          text_out, input_names=names,
                          output_names=["text_embeds"],
                          dynamic_axes={n: {0: "batch", 1: "sequence"}
                                        for n in names},
                          opset_version=14)
    print("wrote", image_out, text_out)


if __name__ == "__main__":
    main()
