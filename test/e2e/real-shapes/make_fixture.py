#!/usr/bin/env python3
"""Real-shaped fixtures of the 2026 decoders, made at test time: a published
config.json (published/, as the model's folder has it) with its
widths and depth cut and nothing else changed (the real vocabulary size and
special-token ids, the published RoPE scaling, windows, tied or untied
heads, the image-text wrapper and its tensor prefix), random weights in the
published dtype (bf16; gpt-oss's experts MXFP4 as its release stores them),
and the logits of the NumPy transcriptions (test/e2e/reference/) on the
values tfmc reads, for a prompt of special and high token ids, the last
one a padded row past the tokenizer's tokens where the vocabulary is
padded.

    make_fixture.py NAME OUT [--max-context N]

writes OUT/ (config.json, model.safetensors), OUT.tokens (the prompt;
OUT.prefill and OUT.forced its first 3 and the rest, OUT.rows the rows of
the logits that decoding the rest one step at a time gives, OUT.vocab
their length),
OUT.logits.bin (f32 [tokens, vocab]) and OUT.stats (the "kv_cache_bytes" and
"recurrent_state_bytes" a compiled model with N positions must report, from
the config's arithmetic: layers that keep every position, sliding layers'
rings of `window` positions, layers that share another's KV keep none,
MLA's latent rows, Gated DeltaNet's convolution and delta-rule states).
CI's NumPy is all it needs (reference/checkpoint.py writes the file).
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import deepseek_v3 as ds  # noqa: E402
import gemma4  # noqa: E402
import glm4_moe as glm  # noqa: E402
import gpt_oss  # noqa: E402
import qwen3_next as qn  # noqa: E402
from checkpoint import Stored, as_bf16, stored_values, write_safetensors  # noqa: E402
from common import config_value  # noqa: E402

F32 = 4

# The cuts: only widths, depths and expert counts; head dimensions, latent
# ranks, windows and every id stay as published.
CUTS = {
    "qwen3.5-0.8b": dict(hidden_size=64, num_hidden_layers=4,
                         num_attention_heads=2, num_key_value_heads=1,
                         linear_num_key_heads=2, linear_num_value_heads=2,
                         intermediate_size=96),
    "qwen3.5-35b-a3b": dict(hidden_size=64, num_hidden_layers=4,
                            num_attention_heads=2, num_key_value_heads=1,
                            linear_num_key_heads=2, linear_num_value_heads=4,
                            num_experts=16, moe_intermediate_size=32,
                            shared_expert_intermediate_size=32),
    "gpt-oss-20b": dict(hidden_size=64, num_hidden_layers=4,
                        num_attention_heads=8, num_key_value_heads=1,
                        num_local_experts=8, intermediate_size=64),
    # Ten layers, the last five reading the KV of the first five (the
    # published 35 and 20 keep the same pattern of four sliding to one full).
    "gemma-4-e2b": dict(hidden_size=64, num_hidden_layers=10,
                        num_kv_shared_layers=5, num_attention_heads=2,
                        intermediate_size=96, hidden_size_per_layer_input=8),
    "moonlight-16b-a3b": dict(hidden_size=64, num_hidden_layers=3,
                              num_attention_heads=2, num_key_value_heads=2,
                              n_routed_experts=8, moe_intermediate_size=32,
                              intermediate_size=128),
    "glm-4.5-air": dict(hidden_size=64, num_hidden_layers=3,
                        num_attention_heads=4, num_key_value_heads=1,
                        n_routed_experts=16, moe_intermediate_size=32,
                        intermediate_size=128),
}

# Special ids of each tokenizer (the published tokenizer_config.json's),
# the end-of-sequence ones among the first three: the prompt's first three
# are prefilled and the rest forced one step at a time, and a forced EOS
# ends a generation.
SPECIAL = {
    "qwen3.5-0.8b": [248045, 248044, 248046, 248068],
    "qwen3.5-35b-a3b": [248045, 248044, 248046, 248068],
    "gpt-oss-20b": [200006, 200005, 200008, 200007, 199998],
    "gemma-4-e2b": [2, 106, 1, 105],
    "moonlight-16b-a3b": [163584, 163585, 163586],
    "glm-4.5-air": [151331, 151333, 151336, 151337],
}


def published(name):
    with open(os.path.join(HERE, "published", name + ".json")) as f:
        return json.load(f)


def cut(name, config):
    """The published config with CUTS applied to its text model's fields."""
    text = config.get("text_config", config)
    text.update(CUTS[name])
    if "layer_types" in text:
        text["layer_types"] = text["layer_types"][:text["num_hidden_layers"]]
    return config, text


def prompt(name, vocab):
    """Special ids, ids across the vocabulary and its last row."""
    return SPECIAL[name] + [7, vocab // 3, vocab // 2, 2 * vocab // 3,
                            vocab - 300, vocab - 1][:12 - len(SPECIAL[name])]


def as_stored(weights):
    return {k: as_bf16(v) for k, v in weights.items()}


def read_back(stored):
    return {k: stored_values(v) for k, v in stored.items()}


# ------------------------------------------------------------ families


def qwen3_5(config, text, rng, tokens):
    cfg = dict(text, rope_theta=text["rope_parameters"]["rope_theta"],
               partial_rotary_factor=text["rope_parameters"]["partial_rotary_factor"])
    prefix, D, V = "model.language_model.", cfg["hidden_size"], cfg["vocab_size"]
    w = {prefix + "embed_tokens.weight": rng.standard_normal((V, D)),
         prefix + "norm.weight": 0.1 * rng.standard_normal(D)}
    if not config["tie_word_embeddings"]:
        w["lm_head.weight"] = rng.standard_normal((V, D)) * 0.3
    for l, kind in enumerate(qn.layer_types(cfg)):
        for k, v in qn.random_layer(rng, cfg, kind).items():
            w[prefix + "layers.%d.%s" % (l, k)] = v
    stored = as_stored(w)
    values = read_back(stored)
    if config_value(cfg, "num_experts", 0):
        # Stacked, as transformers 5 saves the experts (gate_up_proj, down_proj).
        bits = qn.stacked_experts({k: v.data for k, v in stored.items()}, prefix,
                                  cfg["num_hidden_layers"], cfg["num_experts"])
        stored = {k: Stored("BF16", v) for k, v in bits.items()}
    # The vision tower's and the multi-token prediction block's tensors,
    # which a text compile reads past.
    stored.update(as_stored({"model.visual.patch_embed.proj.weight": rng.standard_normal((16, 3)),
                             "mtp.fc.weight": rng.standard_normal((D, 2 * D))}))
    logits = qn.forward(tokens, values, cfg, prefix)
    attention = qn.layer_types(cfg).count("full_attention")
    Hk, Hv, dk, dv, K, C = qn.dims(cfg)
    state = (K - 1) * C + Hv * dk * dv
    per_token = attention * 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * F32
    return stored, logits, (per_token, 0, (len(qn.layer_types(cfg)) - attention) * state * F32)


def gpt_oss_20b(config, text, rng, tokens):
    cfg = dict(config)
    weights = gpt_oss.random_weights(cfg, rng)
    packed, dequantized = gpt_oss.mxfp4_experts(weights, cfg)
    stored = as_stored({k: v for k, v in weights.items() if k not in dequantized})
    values = read_back(stored)
    stored.update({k: Stored("U8", v) for k, v in packed.items()})
    values.update(dequantized)
    logits = gpt_oss.forward(tokens, values, cfg, form="hf")
    types = gpt_oss.layer_types(cfg)
    row = 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * F32
    return stored, logits, (types.count("full_attention") * row,
                            types.count("sliding_attention") * cfg["sliding_window"] * row, 0)


def gemma_4(config, text, rng, tokens):
    cfg = dict(text)
    weights = gemma4.random_weights(cfg, rng)
    # Gemma 4 does not scale its scores (the Q and K norms set them): with
    # norms near 1, heads of 256 and 512 give scores of spread ~20, a
    # softmax so sharp that f32 rounding moves logits by 5e-3. Norms of
    # head_dim^-1/4, as trained ones temper them, keep the spread near 1.
    for k, v in weights.items():
        if k.endswith(("self_attn.q_norm.weight", "self_attn.k_norm.weight")):
            weights[k] = v * len(v) ** -0.25
    prefix = "model.language_model."
    stored = as_stored({prefix + k[len("model."):]: v for k, v in weights.items()})
    values = {"model." + k[len(prefix):]: v for k, v in read_back(stored).items()}
    logits = gemma4.forward(tokens, values, cfg)
    per_token = rings = 0
    for l in range(cfg["num_hidden_layers"]):
        g = gemma4.geometry(cfg, l)
        if g["src"] is not None:
            continue  # reads an earlier layer's rows
        row = (1 if g["k_eq_v"] else 2) * g["kv_heads"] * g["head_dim"] * F32
        if g["sliding"]:
            rings += g["window"] * row
        else:
            per_token += row
    return stored, logits, (per_token, rings, 0)


def deepseek_family(layer_fn=None, random_layer=None):
    def build(config, text, rng, tokens):
        cfg = dict(config)
        tensors, layers = ds.model_weights(rng, cfg, random_layer)
        stored = as_stored(tensors)
        values = read_back(stored)
        logits = ds.forward(tokens, values, ds.nested_layers(values, layers), cfg, layer_fn)
        L = cfg["num_hidden_layers"]
        if "kv_lora_rank" in cfg:
            per_token = L * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * F32
        else:
            per_token = L * 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * F32
        return stored, logits, (per_token, 0, 0)
    return build


BUILDERS = {
    "qwen3.5-0.8b": qwen3_5,
    "qwen3.5-35b-a3b": qwen3_5,
    "gpt-oss-20b": gpt_oss_20b,
    "gemma-4-e2b": gemma_4,
    "moonlight-16b-a3b": deepseek_family(),
    "glm-4.5-air": deepseek_family(glm.decoder_layer, glm.random_layer),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=sorted(BUILDERS))
    parser.add_argument("out")
    parser.add_argument("--max-context", type=int, default=1024)
    args = parser.parse_args()
    config, text = cut(args.name, published(args.name))
    tokens = prompt(args.name, text["vocab_size"])
    rng = np.random.default_rng(sum(map(ord, args.name)))
    stored, logits, (per_token, rings, state) = BUILDERS[args.name](config, text, rng, tokens)
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), stored)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    # The whole prompt; its first 3 and the rest, for a prefill then
    # forced decode steps; the rows those steps give (positions 2 to the
    # last but one: a step's logits are those of the position it fed).
    for suffix, ids in ((".tokens", tokens), (".prefill", tokens[:3]),
                        (".forced", tokens[3:])):
        with open(args.out + suffix, "w") as f:
            f.write(" ".join(map(str, ids)) + "\n")
    with open(args.out + ".rows", "w") as f:
        f.write("2:%d\n" % (len(tokens) - 1))
    with open(args.out + ".vocab", "w") as f:
        f.write("%d\n" % text["vocab_size"])
    logits.astype("<f4").tofile(args.out + ".logits.bin")
    with open(args.out + ".stats", "w") as f:
        f.write('"kv_cache_bytes": %d, "recurrent_state_bytes": %d,\n' %
                (per_token * args.max_context + rings, state))
    print("%s: vocab %d, logits %s, max |logit| %.2f" %
          (args.name, text["vocab_size"], logits.shape, np.abs(logits).max()))


if __name__ == "__main__":
    main()
