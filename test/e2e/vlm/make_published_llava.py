#!/usr/bin/env python3
"""A LLaVA or LLaVA-NeXT folder from a published config.json (published/),
made at test time with NumPy: the text model's config as published
(llava-1.5-7b-hf's names only seven fields and leaves the rest to
LlamaConfig's defaults: 4096 wide, 32 layers and heads, an untied head,
RoPE's base 10000) with its widths and depth cut (grouped KV heads stay
grouped), the CLIP tower's widths and depth cut and its image and patch
sizes kept (336 px in 14 px patches: 576 image rows), and random bf16
weights under 4.40's names, as the hub's folder stores them. A LLaVA-NeXT
folder (llava-v1.6-mistral-7b-hf) gets image_newline and its processor's
preprocessor_config.json.

    make_published_llava.py NAME OUT"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from checkpoint import as_bf16, write_safetensors  # noqa: E402

TEXT_CUT = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                num_attention_heads=4)
# llava-v1.6's preprocessor_config.json but for the sizes, which follow
# the config.
NEXT_PROCESSOR = {
    "do_center_crop": True, "do_convert_rgb": True, "do_normalize": True,
    "do_rescale": True, "do_resize": True,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_processor_type": "LlavaNextImageProcessor",
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "processor_class": "LlavaNextProcessor", "resample": 3,
    "rescale_factor": 0.00392156862745098}
VISION_CUT = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                  num_attention_heads=4)


def main():
    name, out = sys.argv[1:3]
    with open(os.path.join(HERE, "published", name + ".json")) as f:
        config = json.load(f)
    config["text_config"].update(TEXT_CUT)
    if "num_key_value_heads" in config["text_config"]:
        config["text_config"]["num_key_value_heads"] = 2  # still grouped
    config["vision_config"].update(VISION_CUT)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    text, vision = config["text_config"], config["vision_config"]
    rng = np.random.default_rng(5)
    tensors = {}

    def add(tensor_name, *shape, norm=False):
        values = rng.standard_normal(shape) * 0.2
        tensors[tensor_name] = as_bf16(values + 1 if norm else values)

    d, inner, vocab = (text["hidden_size"], text["intermediate_size"],
                       text["vocab_size"])
    heads = text["num_attention_heads"]
    kv = d // heads * text.get("num_key_value_heads", heads)
    lm = "language_model.model."
    add(lm + "embed_tokens.weight", vocab, d)
    add("language_model.lm_head.weight", vocab, d)
    add(lm + "norm.weight", d, norm=True)
    for i in range(text["num_hidden_layers"]):
        at = f"{lm}layers.{i}."
        for proj, rows in (("q", d), ("k", kv), ("v", kv), ("o", d)):
            add(f"{at}self_attn.{proj}_proj.weight", rows, d)
        add(at + "mlp.gate_proj.weight", inner, d)
        add(at + "mlp.up_proj.weight", inner, d)
        add(at + "mlp.down_proj.weight", d, inner)
        add(at + "input_layernorm.weight", d, norm=True)
        add(at + "post_attention_layernorm.weight", d, norm=True)

    w, vinner, p = (vision["hidden_size"], vision["intermediate_size"],
                    vision["patch_size"])
    tokens = (vision["image_size"] // p) ** 2 + 1
    vm = "vision_tower.vision_model."
    add(vm + "embeddings.class_embedding", w)
    add(vm + "embeddings.patch_embedding.weight", w, 3, p, p)
    add(vm + "embeddings.position_embedding.weight", tokens, w)
    for norm in ("pre_layrnorm", "post_layernorm"):
        add(f"{vm}{norm}.weight", w, norm=True)
        add(f"{vm}{norm}.bias", w)
    for i in range(vision["num_hidden_layers"]):
        at = f"{vm}encoder.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            add(f"{at}self_attn.{proj}.weight", w, w)
            add(f"{at}self_attn.{proj}.bias", w)
        add(at + "mlp.fc1.weight", vinner, w)
        add(at + "mlp.fc1.bias", vinner)
        add(at + "mlp.fc2.weight", w, vinner)
        add(at + "mlp.fc2.bias", w)
        for norm in ("layer_norm1", "layer_norm2"):
            add(f"{at}{norm}.weight", w, norm=True)
            add(f"{at}{norm}.bias", w)
    add("multi_modal_projector.linear_1.weight", d, w)
    add("multi_modal_projector.linear_1.bias", d)
    add("multi_modal_projector.linear_2.weight", d, d)
    add("multi_modal_projector.linear_2.bias", d)
    if "image_grid_pinpoints" in config:
        # LLaVA-NeXT: its newline row, and the processor that tiles.
        add("image_newline", d)
        size = vision["image_size"]
        with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
            json.dump(dict(NEXT_PROCESSOR, size={"shortest_edge": size},
                           crop_size={"height": size, "width": size},
                           image_grid_pinpoints=config[
                               "image_grid_pinpoints"]), f, indent=2)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    np.zeros((3, vision["image_size"], vision["image_size"]),
             dtype="<f4").tofile(out + ".pixels")


if __name__ == "__main__":
    main()
