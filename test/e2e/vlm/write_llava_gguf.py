#!/usr/bin/env python3
"""Writes a llava, llava_next, gemma3 or idefics3 folder
(make_llava_goldens.py's, make_llava_next_goldens.py's,
make_gemma3_goldens.py's, make_idefics3_goldens.py's) as llama.cpp keeps a
LLaVA 1.5, LLaVA-NeXT, Gemma 3 or Idefics3 / SmolVLM model: a text GGUF and
an mmproj GGUF, with the standard library only (CI has no NumPy), for
llava-gguf.test and gemma3.test.

The text file is what convert_hf_to_gguf.py writes for
LlavaForConditionalGeneration (conversion/llama.py at de3ff81): text_config
over the top level, "language_model." dropped from the names, the image
side's tensors left out, LLaMA's metadata and Q/K rows permuted
(write_gguf.py's convert_hf); the vocabulary the SentencePiece pieces of
a llama2.c tokenizer.bin, then added_tokens.json's (those
tokenizer_config.json marks special CONTROL, others USER_DEFINED), then "[PAD<id>]" pieces (UNUSED) to the
embedding's rows, as _set_vocab_sentencepiece pads them.

Gemma 3's text file is what it writes for Gemma3ForConditionalGeneration
(conversion/gemma.py, Gemma3Model): the same names and vocabulary,
text_config over Gemma3TextConfig's defaults, architecture "gemma3"
(convert_hf's: 1 added to every RMSNorm weight, Q and K norms included,
Q and K rows as they are, the window, linear RoPE scaling, key_length),
rope.freq_base_swa (rope_local_base_freq), no sliding_window with
sliding_window_pattern 1, token_embd cut to text_config's vocab_size;
tokenizer.ggml.pre "default", add_space_prefix false, and what its
SpecialVocab takes from config.json (text_config's bos, eos and pad ids)
and tokenizer_config.json (add_bos_token, add_eos_token). It writes no
sliding_window_pattern (llama.cpp then takes 6; --set can add one), and
no key scales the local layers' RoPE (llama.cpp: unscaled).

Idefics3's (and SmolVLM's) text file is what it writes for
Idefics3ForConditionalGeneration (conversion/llama.py at de3ff81,
LlamaModel) had text_config's "architectures" been VLlama3ForCausalLM's
(without it the converter refuses the folder): LLaVA's, with
"text_model." dropped from the names (model.text_model.* as model.*,
lm_head.weight kept, as LlamaModel.filter_tensors does) and the vision
tower's and the connector's tensors left out.

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

Gemma 3's mmproj file is what convert_hf_to_gguf.py --mmproj writes
(conversion/gemma.py, Gemma3VisionModel over base.py's MmprojModel) from
an F32 folder, its default --outtype auto being F16 there:
  * general.architecture "clip", general.type "mmproj",
    clip.has_vision_encoder, clip.vision.projection_dim (the text model's
    hidden_size), clip.vision.* (image_size, patch_size, embedding_length,
    feed_forward_length, block_count: all blocks, attention.head_count,
    image_mean and image_std from preprocessor_config.json with
    processor_config.json over it), clip.projector_type "gemma3",
    clip.vision.attention.layer_norm_epsilon, clip.use_gelu true (tanh),
    and clip.vision.projector.scale_factor, (image_size // patch_size) //
    sqrt(image_seq_length), only where it is not 4 (mtmd's default);
  * names: v.patch_embd.{weight,bias}, v.position_embd.weight,
    v.blk.N.{ln1,attn_q,attn_k,attn_v,attn_out,ln2}, SigLIP's fc1 as
    v.blk.N.ffn_up and fc2 as v.blk.N.ffn_down (not swapped), v.post_ln,
    mm.input_projection.weight (transformers' [vision, text] as it is:
    x @ W, not transposed), mm.soft_emb_norm.weight (1 + w: Gemma's
    RMSNorm, which mtmd applies as stored); no class embedding, no pre_ln;
  * F16 for mm.input_projection.weight always and (unless --use-f32, the
    converter's --outtype f32) the blocks' matrices; F32 for the
    embeddings (patch, its bias, positions) and the rest.

Idefics3's mmproj file is what convert_hf_to_gguf.py --mmproj writes
(conversion/smolvlm.py at de3ff81, SmolVLMModel over base.py's
MmprojModel) from an F32 folder, vision_config over Idefics3VisionConfig's
defaults:
  * Gemma 3's keys to clip.vision.image_std (image_size the tile's:
    vision_config's), then clip.projector_type "idefics3",
    clip.vision.attention.layer_norm_epsilon,
    clip.vision.projector.scale_factor (the top level's scale_factor, 2
    where absent), clip.use_gelu true (tanh) and
    clip.vision.preproc_image_size (the preprocessor's size.longest_edge,
    else image_size);
  * names: Gemma 3's for the SigLIP tower (model.vision_model.*), the
    connector's modality_projection.proj.weight as mm.model.fc.weight
    (transformers' [text, vision * scale_factor^2] as it is: x @ W^T, no
    bias); nothing permuted;
  * F16 (unless --use-f32) for the blocks' matrices and
    mm.model.fc.weight; F32 for the embeddings (patch, its bias,
    positions) and the rest.
--f32-everywhere writes F32 throughout (a GGUF file may; the converters
do not, but Idefics3's with --outtype f32), so that a test can compare
within 1e-4.

    write_llava_gguf.py text OUT.gguf FOLDER TOKENIZER_BIN [--type T]
        [--set KEY=JSON]
    write_llava_gguf.py mmproj OUT.gguf FOLDER [--use-f32 |
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
# Gemma3TextConfig's (transformers 4.50), which its AutoConfig fills in
# before llama.cpp's converter reads them: published text_configs give only
# what differs.
GEMMA3_TEXT_DEFAULTS = {"vocab_size": 262208, "hidden_size": 2304,
                        "intermediate_size": 9216, "num_hidden_layers": 26,
                        "num_attention_heads": 8, "num_key_value_heads": 4,
                        "head_dim": 256, "max_position_embeddings": 131072,
                        "rms_norm_eps": 1e-6, "pad_token_id": 0,
                        "eos_token_id": 1, "bos_token_id": 2,
                        "rope_theta": 1000000.0, "sliding_window": 4096,
                        "rope_local_base_freq": 10000.0,
                        "sliding_window_pattern": 6,
                        "query_pre_attn_scalar": 256}
# SiglipVisionConfig's.
SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072,
                   "num_hidden_layers": 12, "num_attention_heads": 12,
                   "image_size": 224, "patch_size": 16,
                   "layer_norm_eps": 1e-6}
# Idefics3VisionConfig's (SmolVLMVisionConfig's are the same).
IDEFICS3_VISION_DEFAULTS = {"hidden_size": 1152, "intermediate_size": 3072,
                            "num_hidden_layers": 12,
                            "num_attention_heads": 16, "image_size": 224,
                            "patch_size": 32, "layer_norm_eps": 1e-6}
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def read(directory):
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    return config, write_gguf.read_safetensors(directory)


def is_gemma3(config):
    return config.get("model_type") == "gemma3"


def is_idefics3(config):
    return config.get("model_type") in ("idefics3", "smolvlm")


def text_tensors(config, tensors):
    """The text model's tensors under the names LLaMA's (and Gemma's) map
    takes."""
    if is_idefics3(config):
        # LlamaModel.filter_tensors drops "text_model." (lm_head.weight
        # kept); TextModel.filter_tensors the tower's and the connector's.
        return {name.replace("text_model.", ""): value
                for name, value in tensors.items()
                if "vision_" not in name and "model.connector." not in name}
    return {name.replace("language_model.", ""): value
            for name, value in tensors.items()
            if name.startswith("language_model.")}


def text(args):
    config, tensors = read(args.llava)
    gemma3 = is_gemma3(config)
    arch = "gemma3" if gemma3 else "llama"
    text_config = {**(GEMMA3_TEXT_DEFAULTS if gemma3 else LLAMA_DEFAULTS),
                   **config["text_config"]}
    text_config.setdefault("num_key_value_heads",
                           text_config["num_attention_heads"])
    hp, weights = write_gguf.convert_hf(text_config,
                                        text_tensors(config, tensors), arch)
    vocab = next(s[0] for n, s, _ in weights if n == "token_embd.weight")
    if gemma3:
        # Gemma3Model keeps the tokenizer's rows (its vocab_size) of
        # token_embd, and writes the local layers' RoPE base but no window
        # where every layer is global.
        if vocab > text_config["vocab_size"]:
            vocab = text_config["vocab_size"]
            weights = [(n, [vocab, s[1]], v[:vocab * s[1]])
                       if n == "token_embd.weight" else (n, s, v)
                       for n, s, v in weights]
        hp["rope.freq_base_swa"] = float(text_config["rope_local_base_freq"])
        if text_config.get("sliding_window_pattern") == 1:
            hp.pop("attention.sliding_window", None)
    # added_tokens.json's pieces follow the SentencePiece model's; those
    # tokenizer_config.json marks special are CONTROL.
    with open(os.path.join(args.llava, "added_tokens.json")) as f:
        added = {i: t for t, i in json.load(f).items()}
    with open(os.path.join(args.llava, "tokenizer_config.json")) as f:
        tokenizer_config = json.load(f)
    decoder = tokenizer_config["added_tokens_decoder"]
    base = min(added)
    metadata = {"general.architecture": arch,
                "general.alignment": write_gguf.ALIGNMENT}
    metadata.update({f"{arch}.{k}": v for k, v in hp.items()})
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
    if gemma3:
        # _set_vocab_sentencepiece's pre-tokenizer name; its SpecialVocab's
        # ids from config.json (the top level, then text_config, as
        # written: no defaults) and add_*_token from tokenizer_config.json;
        # Gemma3Model's add_space_prefix.
        metadata["tokenizer.ggml.pre"] = "default"
        for kind, key in (("bos", "bos_token_id"), ("eos", "eos_token_id"),
                          ("pad", "padding_token_id")):
            given = config.get(f"{kind}_token_id",
                               config["text_config"].get(f"{kind}_token_id"))
            if isinstance(given, int) and 0 <= given < vocab:
                metadata[f"tokenizer.ggml.{key}"] = given
        for kind in ("bos", "eos"):
            flag = tokenizer_config.get(f"add_{kind}_token")
            if isinstance(flag, bool):
                metadata[f"tokenizer.ggml.add_{kind}_token"] = flag
        metadata["tokenizer.ggml.add_space_prefix"] = False
    write_gguf.apply_settings(metadata, args.set)
    tensors_out = []
    for name, shape, values in weights:
        wanted = "F32" if len(shape) == 1 else args.type
        tensors_out.append((name, shape, wanted,
                            write_gguf.encode(values, wanted)))
    write_gguf.write(args.out, metadata, tensors_out)


def llava_mmproj(args, config, tensors):
    """The legacy converter's metadata and (name, shape, type, values)."""
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
        out.append((target, shape, wanted, values))
    return metadata, out


def preprocessing(directory):
    """preprocessor_config.json with processor_config.json (and its
    image_processor) over it, as MmprojModel reads them."""
    merged = {}
    for file in ("preprocessor_config.json", "processor_config.json"):
        path = os.path.join(directory, file)
        if os.path.isfile(path):
            with open(path) as f:
                cfg = json.load(f)
            merged.update({**cfg, **cfg.get("image_processor", {})})
    return merged


# A SigLIP tower's tensors (names after the tower's prefix) in an mmproj
# file of convert_hf_to_gguf.py --mmproj: fc1 as ffn_up and fc2 as
# ffn_down (not swapped); no class embedding, no pre_ln.
SIGLIP_NAMES = {"embeddings.patch_embedding.weight": "v.patch_embd.weight",
                "embeddings.patch_embedding.bias": "v.patch_embd.bias",
                "embeddings.position_embedding.weight":
                    "v.position_embd.weight",
                "post_layernorm.weight": "v.post_ln.weight",
                "post_layernorm.bias": "v.post_ln.bias"}
SIGLIP_LAYER_NAMES = {"self_attn.q_proj": "attn_q",
                      "self_attn.k_proj": "attn_k",
                      "self_attn.v_proj": "attn_v",
                      "self_attn.out_proj": "attn_out",
                      "layer_norm1": "ln1", "layer_norm2": "ln2",
                      "mlp.fc1": "ffn_up", "mlp.fc2": "ffn_down"}


def siglip_name(name, tower, model):
    """The mmproj name of a SigLIP tower's tensor (`tower` the prefix of
    its names), None for one outside the tower or in SigLIP's pooling
    head (which the file leaves out)."""
    if not name.startswith(tower) or name.startswith(tower + "head."):
        return None
    rest = name[len(tower):]
    target = SIGLIP_NAMES.get(rest)
    if rest.startswith("encoder.layers."):
        layer, part = rest[len("encoder.layers."):].split(".", 1)
        part, kind = part.rsplit(".", 1)
        if part in SIGLIP_LAYER_NAMES:
            target = f"v.blk.{layer}.{SIGLIP_LAYER_NAMES[part]}.{kind}"
    if target is None:
        sys.exit(f"{name}: no name in {model}'s mmproj file")
    return target


def mmproj_type(args, name, target, shape):
    """The type convert_hf_to_gguf.py --mmproj gives a tensor of an F32
    folder in Gemma 3's and Idefics3's files (Gemma 3's always-F16
    mm.input_projection.weight aside): F32 for the embeddings (an HF name
    with ".embeddings.", which both force), vectors and norms' weights;
    F16 (--outtype auto) or F32 (--use-f32: --outtype f32) for the other
    matrices; F32 throughout with --f32-everywhere."""
    if args.f32_everywhere or ".embeddings." in name or len(shape) == 1 \
            or target.endswith("_norm.weight"):
        return "F32"
    return "F32" if args.use_f32 else "F16"


def mmproj_metadata(args, general_name, vision, text_hidden, pre):
    """What MmprojModel.set_gguf_parameters writes for a vision tower,
    after general.type (and the fixture's general.name): the model's own
    keys follow."""
    return {
        "general.architecture": "clip",
        "general.alignment": write_gguf.ALIGNMENT,
        "general.type": "mmproj",
        # --outtype auto on F32 weights is F16; --use-f32 is --outtype f32.
        "general.file_type": 0 if args.use_f32 or args.f32_everywhere else 1,
        "general.name": general_name,
        "clip.has_vision_encoder": True,
        "clip.vision.projection_dim": text_hidden,
        "clip.vision.image_size": vision["image_size"],
        "clip.vision.patch_size": vision["patch_size"],
        "clip.vision.embedding_length": vision["hidden_size"],
        "clip.vision.feed_forward_length": vision["intermediate_size"],
        "clip.vision.block_count": vision["num_hidden_layers"],
        "clip.vision.attention.head_count": vision["num_attention_heads"],
        "clip.vision.image_mean": [float(v) for v in pre["image_mean"]],
        "clip.vision.image_std": [float(v) for v in pre["image_std"]],
    }


def gemma3_mmproj(args, config, tensors):
    """Gemma3VisionModel's metadata and (name, shape, type, values)."""
    vision = {**SIGLIP_DEFAULTS, **config["vision_config"]}
    text_config = {**GEMMA3_TEXT_DEFAULTS, **config.get("text_config", {})}
    pre = preprocessing(args.llava)
    image_size, patch_size = vision["image_size"], vision["patch_size"]
    metadata = mmproj_metadata(args, "gemma3 fixture", vision,
                               text_config["hidden_size"], pre)
    metadata.update({
        "clip.projector_type": "gemma3",
        "clip.vision.attention.layer_norm_epsilon":
            float(vision["layer_norm_eps"]),
        "clip.use_gelu": True,
    })
    # The pooling's kernel, written where it is not mtmd's 4 (tiny models).
    per_side = int(pre.get("image_seq_length", 256) ** 0.5)
    scale = (image_size // patch_size) // per_side
    if scale > 0 and scale != 4:
        metadata["clip.vision.projector.scale_factor"] = scale
    out = []
    for name, (shape, values) in tensors.items():
        if name == "multi_modal_projector.mm_input_projection_weight":
            target = "mm.input_projection.weight"
        elif name == "multi_modal_projector.mm_soft_emb_norm.weight":
            target = "mm.soft_emb_norm.weight"
            values = [v + 1.0 for v in values]  # Gemma's 1 + w
        else:  # the text model's, and SigLIP's pooling head: None
            target = siglip_name(name, "vision_tower.vision_model.",
                                 "Gemma 3")
            if target is None:
                continue
        if "input_projection" in name and not args.f32_everywhere:
            wanted = "F16"
        else:
            wanted = mmproj_type(args, name, target, shape)
        out.append((target, shape, wanted, values))
    return metadata, out


def idefics3_mmproj(args, config, tensors):
    """SmolVLMModel's metadata and (name, shape, type, values)."""
    vision = {**IDEFICS3_VISION_DEFAULTS, **config["vision_config"]}
    pre = preprocessing(args.llava)
    # MmprojModel's n_embd_text: text_config over the top level.
    text_hidden = {**config, **config.get("text_config", {})}["hidden_size"]
    metadata = mmproj_metadata(args, "idefics3 fixture", vision, text_hidden,
                               pre)
    metadata.update({
        "clip.projector_type": "idefics3",
        "clip.vision.attention.layer_norm_epsilon":
            float(vision["layer_norm_eps"]),
        "clip.vision.projector.scale_factor": config.get("scale_factor", 2),
        "clip.use_gelu": True,
        # The longest edge images are resized to before their tiles are
        # cut (without it mtmd takes its legacy, letterboxing path).
        "clip.vision.preproc_image_size":
            pre.get("size", {}).get("longest_edge", vision["image_size"]),
    })
    out = []
    for name, (shape, values) in tensors.items():
        if name == "model.connector.modality_projection.proj.weight":
            target = "mm.model.fc.weight"
        else:  # the text model's: None
            target = siglip_name(name, "model.vision_model.", "Idefics3")
            if target is None:
                continue
        out.append((target, shape, mmproj_type(args, name, target, shape),
                    values))
    return metadata, out


def mmproj(args):
    config, tensors = read(args.llava)
    convert = gemma3_mmproj if is_gemma3(config) else \
        idefics3_mmproj if is_idefics3(config) else llava_mmproj
    metadata, tensors_out = convert(args, config, tensors)
    write_gguf.apply_settings(metadata, args.set)
    out = []
    for target, shape, wanted, values in tensors_out:
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
    t.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                   help="add or replace metadata (JSON null removes it)")
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
