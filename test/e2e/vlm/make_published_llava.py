#!/usr/bin/env python3
"""A LLaVA, LLaVA-NeXT, Gemma 3 or SmolVLM folder from a published
config.json (published/),
made at test time with NumPy: the text model's config as published
(llava-1.5-7b-hf's names only seven fields and leaves the rest to
LlamaConfig's defaults: 4096 wide, 32 layers and heads, an untied head,
RoPE's base 10000) with its widths and depth cut (grouped KV heads stay
grouped), the CLIP tower's widths and depth cut and its image and patch
sizes kept (336 px in 14 px patches: 576 image rows), and random bf16
weights under 4.40's names, as the hub's folder stores them. A LLaVA-NeXT
folder (llava-v1.6-mistral-7b-hf) gets image_newline and its processor's
preprocessor_config.json. A Gemma 3 folder (gemma-3-4b-it) keeps its
text model's defaults but the widths and depth (8 heads of 256, 4 KV
heads; six layers, the sixth global), a SigLIP tower's widths and depth
cut (896 px in 14 px patches: 4096 patches, 256 image rows), Gemma's
norms and its projector, a tied head, under 4.50's names. A SmolVLM
folder (smolvlm-256m-instruct: its config.json's fields as a port's notes
quote the hub's at revision 7e3e67ed, the inert ones left out) keeps its
512 px tiles in 16 px patches, 64 rows a tile after the 4 x 4 pixel
shuffle, its LLaMA text model's widths and depth cut (head_dim with
them), its processor's files as published, and a byte-level tokenizer of
256 byte tokens (and unused pieces up to SmolVLM's ids) holding its
added tokens at their ids
(<global-img> 49152, <row_1_col_1> 49153 ... <row_6_col_6> 49188,
<fake_token_around_image> 49189, <image> 49190, <end_of_utterance>
49279), under 4.46's names.

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
# Gemma 3's preprocessor_config.json as its converter writes it, but for
# the size, which follows the config.
GEMMA3_PROCESSOR = {
    "do_convert_rgb": None, "do_normalize": True, "do_pan_and_scan": None,
    "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
    "image_processor_type": "Gemma3ImageProcessor", "image_seq_length": 256,
    "image_std": [0.5, 0.5, 0.5], "processor_class": "Gemma3Processor",
    "resample": 2, "rescale_factor": 0.00392156862745098}
VISION_CUT = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                  num_attention_heads=4)


def add_tower_layers(add, vm, vision, **norm):
    """The vision tower's blocks (CLIP's and SigLIP's alike) under `vm`;
    `norm` marks their LayerNorms' scales for `add`."""
    w, inner = vision["hidden_size"], vision["intermediate_size"]
    for i in range(vision["num_hidden_layers"]):
        at = f"{vm}encoder.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            add(f"{at}self_attn.{proj}.weight", w, w)
            add(f"{at}self_attn.{proj}.bias", w)
        add(at + "mlp.fc1.weight", inner, w)
        add(at + "mlp.fc1.bias", inner)
        add(at + "mlp.fc2.weight", w, inner)
        add(at + "mlp.fc2.bias", w)
        for name in ("layer_norm1", "layer_norm2"):
            add(f"{at}{name}.weight", w, **norm)
            add(f"{at}{name}.bias", w)


def random_tensors():
    """The tensors of a folder and the function that adds one: random
    bf16 values (seeded), a norm's scale around 1 with `norm`."""
    rng = np.random.default_rng(5)
    tensors = {}

    def add(tensor_name, *shape, norm=False):
        values = rng.standard_normal(shape) * 0.2
        tensors[tensor_name] = as_bf16(values + 1 if norm else values)
    return tensors, add


def add_llama_text(add, lm, head, text, q, kv):
    """A LLaMA text model's tensors under `lm` (its head under `head`):
    `q` and `kv` rows of the attention's projections."""
    d, inner, vocab = (text["hidden_size"], text["intermediate_size"],
                       text["vocab_size"])
    add(lm + "embed_tokens.weight", vocab, d)
    add(head + "weight", vocab, d)
    add(lm + "norm.weight", d, norm=True)
    for i in range(text["num_hidden_layers"]):
        at = f"{lm}layers.{i}."
        for proj, rows in (("q", q), ("k", kv), ("v", kv)):
            add(f"{at}self_attn.{proj}_proj.weight", rows, d)
        add(f"{at}self_attn.o_proj.weight", d, q)
        add(at + "mlp.gate_proj.weight", inner, d)
        add(at + "mlp.up_proj.weight", inner, d)
        add(at + "mlp.down_proj.weight", d, inner)
        add(at + "input_layernorm.weight", d, norm=True)
        add(at + "post_attention_layernorm.weight", d, norm=True)


def main():
    name, out = sys.argv[1:3]
    with open(os.path.join(HERE, "published", name + ".json")) as f:
        config = json.load(f)
    if config["model_type"] == "idefics3":
        write_idefics3(config, out)
        return
    gemma = config["model_type"] == "gemma3"
    if gemma:
        # Gemma3TextConfig's 8 heads of 256 and 4 KV heads stay; six layers
        # keep one global (sliding_window_pattern 6).
        config["text_config"].update(hidden_size=64, intermediate_size=96,
                                     num_hidden_layers=6)
    else:
        config["text_config"].update(TEXT_CUT)
    if "num_key_value_heads" in config["text_config"]:
        config["text_config"]["num_key_value_heads"] = 2  # still grouped
    config["vision_config"].update(VISION_CUT)
    if gemma:
        config["vision_config"]["num_hidden_layers"] = 2
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if gemma:
        write_gemma3(config, out)
        return

    text, vision = config["text_config"], config["vision_config"]
    tensors, add = random_tensors()

    d = text["hidden_size"]
    heads = text["num_attention_heads"]
    kv = d // heads * text.get("num_key_value_heads", heads)
    add_llama_text(add, "language_model.model.", "language_model.lm_head.",
                   text, d, kv)

    w, p = vision["hidden_size"], vision["patch_size"]
    tokens = (vision["image_size"] // p) ** 2 + 1
    vm = "vision_tower.vision_model."
    add(vm + "embeddings.class_embedding", w)
    add(vm + "embeddings.patch_embedding.weight", w, 3, p, p)
    add(vm + "embeddings.position_embedding.weight", tokens, w)
    for norm in ("pre_layrnorm", "post_layernorm"):
        add(f"{vm}{norm}.weight", w, norm=True)
        add(f"{vm}{norm}.bias", w)
    add_tower_layers(add, vm, vision, norm=True)
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


def write_gemma3(config, out):
    """Gemma 3's tensors under 4.50's names, random bf16: the text model's
    defaults as Gemma3TextConfig has them where the config is silent."""
    text, vision = config["text_config"], config["vision_config"]
    tensors, add = random_tensors()

    d, inner = text["hidden_size"], text["intermediate_size"]
    heads, kv_heads, head = 8, 4, 256
    lm = "language_model.model."
    add(lm + "embed_tokens.weight", 262208, d)
    add(lm + "norm.weight", d)
    for i in range(text["num_hidden_layers"]):
        at = f"{lm}layers.{i}."
        for proj, rows in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
            add(f"{at}self_attn.{proj}_proj.weight", rows * head, d)
        add(f"{at}self_attn.o_proj.weight", d, heads * head)
        add(at + "self_attn.q_norm.weight", head)
        add(at + "self_attn.k_norm.weight", head)
        add(at + "mlp.gate_proj.weight", inner, d)
        add(at + "mlp.up_proj.weight", inner, d)
        add(at + "mlp.down_proj.weight", d, inner)
        for norm in ("input_layernorm", "post_attention_layernorm",
                     "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            add(f"{at}{norm}.weight", d)
    w, p = vision["hidden_size"], vision["patch_size"]
    vm = "vision_tower.vision_model."
    add(vm + "embeddings.patch_embedding.weight", w, 3, p, p)
    add(vm + "embeddings.patch_embedding.bias", w)
    add(vm + "embeddings.position_embedding.weight",
        (vision["image_size"] // p) ** 2, w)
    add(vm + "post_layernorm.weight", w)
    add(vm + "post_layernorm.bias", w)
    add_tower_layers(add, vm, vision)
    add("multi_modal_projector.mm_input_projection_weight", w, d)
    add("multi_modal_projector.mm_soft_emb_norm.weight", w)
    size = vision["image_size"]
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(dict(GEMMA3_PROCESSOR, size={"height": size,
                                               "width": size}), f, indent=2)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    np.zeros((3, size, size), dtype="<f4").tofile(out + ".pixels")


def byte_tokens():
    """GPT-2's bytes as the characters byte-level BPE spells them."""
    kept = (list(range(ord("!"), ord("~") + 1)) +
            list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
            list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    chars, extra = {}, 0
    for b in range(256):
        if b in kept:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def write_smolvlm_tokenizer(out):
    """A byte-level BPE tokenizer.json without merges: SmolLM2's three
    specials, the 256 bytes, and SmolVLM's added tokens at their ids."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {text: i for i, text in enumerate(specials)}
    for i, text in enumerate(byte_tokens()):
        vocab[text] = len(specials) + i
    # Every id up to the added tokens' is a token (tfmc refuses gaps): the
    # ids SmolLM2's merges make stand in as pieces no text makes.
    for i in list(range(len(vocab), 49152)) + list(range(49191, 49279)):
        vocab[f"<unused_{i}>"] = i
    added = [(0, specials[0]), (1, specials[1]), (2, specials[2]),
             (49152, "<global-img>")]
    added += [(49152 + r * 6 + c + 1, f"<row_{r + 1}_col_{c + 1}>")
              for r in range(6) for c in range(6)]
    added += [(49189, "<fake_token_around_image>"), (49190, "<image>"),
              (49279, "<end_of_utterance>")]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [
            {"id": i, "content": text, "single_word": False,
             "lstrip": False, "rstrip": False, "normalized": False,
             "special": True} for i, text in added],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False,
                  "byte_fallback": False, "vocab": vocab, "merges": []}}
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)


# SmolVLM-256M-Instruct's preprocessor_config.json and processor_config.json.
SMOLVLM_PROCESSOR = {
    "do_convert_rgb": True, "do_image_splitting": True, "do_normalize": True,
    "do_pad": True, "do_rescale": True, "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5], "image_processor_type":
    "Idefics3ImageProcessor", "image_std": [0.5, 0.5, 0.5],
    "max_image_size": {"longest_edge": 512},
    "processor_class": "Idefics3Processor", "resample": 1,
    "rescale_factor": 0.00392156862745098, "size": {"longest_edge": 2048}}


def write_idefics3(config, out):
    """SmolVLM's tensors under 4.46's names, random bf16, its processor's
    files and a tokenizer with its added tokens (this file's comment)."""
    text, vision = config["text_config"], config["vision_config"]
    text.update(TEXT_CUT, num_key_value_heads=2, head_dim=16)
    vision.update(VISION_CUT, num_hidden_layers=2)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tensors, add = random_tensors()

    d = text["hidden_size"]
    q, kv = 4 * 16, 2 * 16
    add_llama_text(add, "model.text_model.", "lm_head.", text, q, kv)
    w, p = vision["hidden_size"], vision["patch_size"]
    vm = "model.vision_model."
    add(vm + "embeddings.patch_embedding.weight", w, 3, p, p)
    add(vm + "embeddings.patch_embedding.bias", w)
    add(vm + "embeddings.position_embedding.weight",
        (vision["image_size"] // p) ** 2, w)
    add(vm + "post_layernorm.weight", w, norm=True)
    add(vm + "post_layernorm.bias", w)
    add_tower_layers(add, vm, vision, norm=True)
    factor = config["scale_factor"]
    add("model.connector.modality_projection.proj.weight", d,
        w * factor * factor)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(SMOLVLM_PROCESSOR, f, indent=2)
    with open(os.path.join(out, "processor_config.json"), "w") as f:
        json.dump({"image_seq_len": 64, "processor_class":
                   "Idefics3Processor"}, f, indent=2)
    write_smolvlm_tokenizer(out)


if __name__ == "__main__":
    main()
