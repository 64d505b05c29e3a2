#!/usr/bin/env python3
"""Exports a compare_encoders.py model (a random BertModel or ViTModel
directory) to ONNX for the ONNX Runtime peer, with transformers' own model
class (eager attention) and the batch and sequence dimensions dynamic:
BERT takes input_ids and attention_mask [batch, sequence] (int64), ViT
pixel_values [batch, 3, 224, 224]; both return last_hidden_state.

    source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 export_onnx_encoder.py MODEL_DIR OUT.onnx [--vit]
"""
import sys

import torch
import transformers as tf


def main():
    directory, out = sys.argv[1], sys.argv[2]
    vit = "--vit" in sys.argv[3:]
    cls = tf.ViTModel if vit else tf.BertModel
    config = (tf.ViTConfig if vit else tf.BertConfig).from_pretrained(directory)
    config._attn_implementation = "eager"
    model = cls.from_pretrained(directory, config=config,
                                add_pooling_layer=False).eval()
    if vit:
        inputs = (torch.rand(1, 3, 224, 224),)
        names = ["pixel_values"]
        axes = {"pixel_values": {0: "batch"}}
    else:
        ids = torch.arange(1000, 1016).unsqueeze(0)
        inputs = (ids, torch.ones_like(ids))
        names = ["input_ids", "attention_mask"]
        axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes["last_hidden_state"] = {0: "batch"} if vit else {0: "batch",
                                                          1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(model, inputs, out, input_names=names,
                          output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=14)
    print("wrote", out)


if __name__ == "__main__":
    main()
