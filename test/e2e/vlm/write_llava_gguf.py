#!/usr/bin/env python3
"""Writes a llava or llava_next folder (make_llava_goldens.py's,
make_llava_next_goldens.py's) as llama.cpp keeps a LLaVA 1.5 or LLaVA-NeXT
model: a text GGUF and an mmproj GGUF, with the standard library only (CI
has no NumPy), for llava-gguf.test.

The text file is what convert_hf_to_gguf.py writes for
LlavaForConditionalGeneration (conversion/llama.py at de3ff81): text_config
over the top level, "language_model." dropped from the names, the image
side's tensors left out, LLaMA's metadata and Q/K rows permuted
(write_gguf.py's convert_hf); the vocabulary the SentencePiece pieces of
a llama2.c tokenizer.bin, then added_tokens.json's (those
tokenizer_config.json marks special CONTROL, others USER_DEFINED), then "[PAD<id>]" pieces (UNUSED) to the
embedding's rows, as _set_vocab_sentencepiece pads them.

The mmproj file is what the legacy
tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py writes from a
CLIP folder and LLaVA's projector (llava_surgery_v2.py), the only converter
of llama.cpp that takes LLaVA 1.5 (convert_hf_to_gguf.py --mmproj refuses a
CLIP tower):
  * general.architecture "clip", clip.projector_type "mlp",
    clip.has_vision_encoder, clip.has_llava_projector, clip.use_gelu
    (false: quick_gelu), clip.vision.* (image_size, patch_size,
    embedding_length, feed_forward_length, projection_dim, block_count,
    attention.head_count, attention.layer_norm_epsilon, image_mean,
    image_std);
  * only the blocks up to vision_feature_layer, block_count their number,
    no post_layernorm;
  * names: v.class_embd, v.patch_embd.weight, v.position_embd.weight,
    v.pre_ln, v.blk.N.{attn_q,attn_k,attn_v,attn_out,ln1,ln2}, CLIP's fc1
    as v.blk.N.ffn_down and fc2 as v.blk.N.ffn_up (the legacy names are
    swapped), mm.0 and mm.2;
  * LLaVA-NeXT's: clip.vision.image_grid_pinpoints flattened as width,
    height pairs (LLaVA's and mtmd's order; the folder's are height, width),
    image_aspect_ratio "anyres", mm_patch_merge_type "spatial_unpad",
    image_crop_resolution and image_split_resolution 224 (as llava-v1.6's
    config has them), image_newline as model.image_newline;
  * F16 for the patch embedding and the projector's matrices always, and
    (unless --use-f32) every other matrix; F32 for the rest.
--f32-everywhere writes F32 throughout (a GGUF file may; the converter
does not), so that a test can compare within 1e-4.

    write_llava_gguf.py text OUT.gguf LLAVA_DIR TOKENIZER_BIN [--type T]
    write_llava_gguf.py mmproj OUT.gguf LLAVA_DIR [--use-f32 |
        --f32-everywhere] [--set KEY=JSON] [--drop T] [--reshape T=D0,D1]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import write_gguf  # noqa: E402

# LlamaConfig's defaults that a llava text_config leaves out (those
# write_gguf.py's convert_hf reads).
LLAMA_DEFAULTS = {"max_position_embeddings": 2048, "rms_norm_eps": 1e-6,
                  "rope_theta": 10000.0}
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def read(directory):
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    return config, write_gguf.read_safetensors(directory)


def text(args):
    config, tensors = read(args.llava)
    text_config = {**LLAMA_DEFAULTS, **config["text_config"]}
    text_config.setdefault("num_key_value_heads",
                           text_config["num_attention_heads"])
    text_tensors = {name.replace("language_model.", ""): value
                    for name, value in tensors.items()
                    if name.startswith("language_model.")}
    hp, weights = write_gguf.convert_hf(text_config, text_tensors, "llama")
    vocab = next(s[0] for n, s, _ in weights if n == "token_embd.weight")
    # added_tokens.json's pieces follow the SentencePiece model's; those
    # tokenizer_config.json marks special are CONTROL.
    with open(os.path.join(args.llava, "added_tokens.json")) as f:
        added = {i: t for t, i in json.load(f).items()}
    with open(os.path.join(args.llava, "tokenizer_config.json")) as f:
        decoder = json.load(f)["added_tokens_decoder"]
    base = min(added)
    metadata = {"general.architecture": "llama",
                "general.alignment": write_gguf.ALIGNMENT}
    metadata.update({f"llama.{k}": v for k, v in hp.items()})
    metadata.update(write_gguf.sentencepiece_from_llama2c(args.tokenizer,
                                                          base))
    tokens = metadata["tokenizer.ggml.tokens"]
    scores = metadata["tokenizer.ggml.scores"]
    types = metadata["tokenizer.ggml.token_type"]
    for i in range(base, vocab):
        if i in added:
            tokens.append(added[i])
            scores.append(-1000.0)
            types.append(3 if decoder.get(str(i), {}).get("special") else 4)
        else:
            tokens.append(f"[PAD{i}]")
            scores.append(-10000.0)
            types.append(5)
    metadata["tokenizer.ggml.add_bos_token"] = True
    tensors_out = []
    for name, shape, values in weights:
        wanted = "F32" if len(shape) == 1 else args.type
        tensors_out.append((name, shape, wanted,
                            write_gguf.encode(values, wanted)))
    write_gguf.write(args.out, metadata, tensors_out)


def mmproj(args):
    config, tensors = read(args.llava)
    vision = config["vision_config"]
    layers = vision["num_hidden_layers"]
    chosen = config.get("vision_feature_layer", -2)
    kept = layers + 1 + chosen if chosen < 0 else chosen
    metadata = {
        "general.architecture": "clip", "general.alignment": write_gguf.ALIGNMENT,
        "clip.has_text_encoder": False, "clip.has_vision_encoder": True,
        "clip.has_llava_projector": True,
        "general.file_type": 0 if args.use_f32 or args.f32_everywhere else 1,
        "general.name": "llava fixture",
        "general.description": "image encoder for LLaVA",
        "clip.projector_type": "mlp",
        "clip.vision.image_size": vision["image_size"],
        "clip.vision.patch_size": vision["patch_size"],
        "clip.vision.embedding_length": vision["hidden_size"],
        "clip.vision.feed_forward_length": vision["intermediate_size"],
        "clip.vision.projection_dim": vision.get("projection_dim", 512),
        "clip.vision.attention.head_count": vision["num_attention_heads"],
        "clip.vision.attention.layer_norm_epsilon":
            vision.get("layer_norm_eps", 1e-5),
        "clip.vision.block_count": kept,
        "clip.vision.image_mean": CLIP_MEAN,
        "clip.vision.image_std": CLIP_STD,
        "clip.use_gelu": vision.get("hidden_act", "quick_gelu") == "gelu",
    }
    if "image_grid_pinpoints" in config:
        # LLaVA-NeXT (its surgery's config): the pinpoints flattened,
        # spatial_unpad, and image_newline as model.image_newline.
        # Width, height pairs, as LLaVA's code and mtmd read them (the
        # folder's are height, width).
        metadata["clip.vision.image_grid_pinpoints"] = [
            size for height, width in config["image_grid_pinpoints"]
            for size in (width, height)]
        metadata["clip.vision.image_aspect_ratio"] = "anyres"
        metadata["clip.vision.mm_patch_merge_type"] = "spatial_unpad"
        # llava-v1.6's config carries these, which anyres does not use.
        metadata["clip.vision.image_crop_resolution"] = 224
        metadata["clip.vision.image_split_resolution"] = 224
    write_gguf.apply_settings(metadata, args.set)
    tower = "vision_tower.vision_model."
    renames = [("embeddings.class_embedding", "v.class_embd"),
               ("embeddings.patch_embedding.weight", "v.patch_embd.weight"),
               ("embeddings.position_embedding.weight",
                "v.position_embd.weight"),
               ("pre_layrnorm.", "v.pre_ln.")]
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.out_proj": "attn_out",
             "layer_norm1": "ln1", "layer_norm2": "ln2",
             "mlp.fc1": "ffn_down", "mlp.fc2": "ffn_up"}
    out = []
    for name, (shape, values) in tensors.items():
        target = None
        if name == "image_newline":
            target = "model.image_newline"
        elif name.startswith("multi_modal_projector."):
            rest = name[len("multi_modal_projector."):]
            target = rest.replace("linear_1.", "mm.0.").replace(
                "linear_2.", "mm.2.")
        elif name.startswith(tower):
            rest = name[len(tower):]
            for prefix, to in renames:
                if rest.startswith(prefix):
                    target = to + rest[len(prefix):]
            if rest.startswith("encoder.layers."):
                layer, part = rest[len("encoder.layers."):].split(".", 1)
                part, kind = part.rsplit(".", 1)
                if int(layer) < kept:
                    target = f"v.blk.{layer}.{parts[part]}.{kind}"
        if target is None:  # the text model's, and what the file leaves out
            continue
        if args.f32_everywhere or len(shape) == 1:
            wanted = "F32"
        elif len(shape) == 4 or target.startswith("mm."):
            wanted = "F16"
        else:
            wanted = "F32" if args.use_f32 else "F16"
        if target in args.drop:
            continue
        for rule in args.reshape:  # the same values, another shape
            name, dims = rule.split("=")
            if name == target:
                shape = [int(d) for d in dims.split(",")]
        out.append((target, shape, wanted, write_gguf.encode(values, wanted)))
    write_gguf.write(args.out, metadata, out)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="kind", required=True)
    t = sub.add_parser("text")
    t.add_argument("out")
    t.add_argument("llava")
    t.add_argument("tokenizer")
    t.add_argument("--type", default="F32")
    m = sub.add_parser("mmproj")
    m.add_argument("out")
    m.add_argument("llava")
    m.add_argument("--use-f32", action="store_true")
    m.add_argument("--f32-everywhere", action="store_true")
    m.add_argument("--set", action="append", default=[], metavar="KEY=JSON")
    m.add_argument("--drop", action="append", default=[], metavar="TENSOR",
                   help="leave a tensor out (a malformed file)")
    m.add_argument("--reshape", action="append", default=[],
                   metavar="TENSOR=D0,D1", help="write a tensor's values "
                   "under another shape of as many (a malformed file)")
    args = parser.parse_args()
    (text if args.kind == "text" else mmproj)(args)


if __name__ == "__main__":
    main()
