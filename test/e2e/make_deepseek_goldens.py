#!/usr/bin/env python3
"""Writes the fixtures of DeepSeek's architecture and of GLM-4.5 (its router
behind grouped-query attention, reference/glm4_moe.py) (test/e2e/families/Inputs/<name>/:
config.json + model.safetensors, small random weights in transformers'
layout) and their goldens (<name>.logits.bin: little-endian f32 [12, vocab],
the logits of every position of TOKENS). transformers 4.40 has no DeepSeek,
so the goldens come from the NumPy transcription of transformers'
DeepseekV3 modeling code (reference/deepseek_v3.py: MLA in its naive form,
as transformers computes it, which tfmc's absorbed form must match; the
V3 and V2 routers), in float64.

    /usr/bin/python3 test/e2e/make_deepseek_goldens.py [deepseek_v3 ...]

needs NumPy, nothing else (reference/checkpoint.py writes the safetensors).
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import deepseek_v3 as ds  # noqa: E402
from checkpoint import as_f32, write_safetensors  # noqa: E402
import glm4_moe as glm  # noqa: E402

OUT = os.path.join(HERE, "families", "Inputs")
TOKENS = [1, 17, 42, 5, 63, 0, 28, 9, 33, 12, 50, 7]
VOCAB = 64


def write(name, config, seed, random_layer=None, decoder_layer=None):
    rng = np.random.default_rng(seed)
    tensors, layers = ds.model_weights(rng, config, random_layer)
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      {k: as_f32(v) for k, v in tensors.items()})
    published = {k: v for k, v in config.items() if k != "scale_convention"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(published, f, indent=2, sort_keys=True)
    # The golden from the float32 weights tfmc reads.
    stored = {k: np.asarray(v, dtype=np.float32).astype(np.float64)
              for k, v in tensors.items()}
    logits = ds.forward(TOKENS, stored, ds.nested_layers(stored, layers),
                        config, decoder_layer)
    logits.astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {logits.shape}, max |logit| {np.abs(logits).max():.2f}")


COMMON = dict(vocab_size=VOCAB, num_hidden_layers=3, rms_norm_eps=1e-6,
              max_position_embeddings=256, bos_token_id=1, eos_token_id=2,
              hidden_act="silu", tie_word_embeddings=False,
              architectures=["DeepseekV3ForCausalLM"])


def deepseek_v3():
    """DeepSeek-V3's layout (Moonlight and Kimi-K2 keep it): a query LoRA,
    a 16 + 8 latent row, YaRN with mscale_all_dim, a dense first layer, then
    16 experts in 4 groups (the best 2 kept), sigmoid scores with a
    selection bias, top 4 renormalized and scaled by 2.5, a shared
    expert."""
    config = dict(ds.CFG_V3_SMALL, **COMMON,
                  num_key_value_heads=4, topk_method="noaux_tc",
                  scoring_func="sigmoid", num_nextn_predict_layers=1)
    write("deepseek-v3", config, 31)


def deepseek_v2_lite():
    """DeepSeek-V2-Lite's layout: no query LoRA, softmax scores, a plain
    top 3 (greedy) unnormalized, two shared experts, YaRN with mscale
    0.707."""
    config = dict(ds.CFG_V2LITE_SMALL, **COMMON, num_key_value_heads=3,
                  scoring_func="softmax")
    config["architectures"] = ["DeepseekV2ForCausalLM"]
    write("deepseek-v2-lite", config, 32)


def moonlight():
    """Moonlight-16B-A3B's layout (DeepSeek-V3's without a query LoRA, one
    expert group) at widths whose ratios are the published ones: the latent
    (128) four times a head's unrotated key (32) and value (32), so that
    MLA's expanded form pays for long prompts; rows a multiple of 32, so
    that a Q8_0 file keeps the per-head weights in blocks."""
    config = dict(COMMON, model_type="deepseek_v3", hidden_size=64,
                  num_attention_heads=2, num_key_value_heads=2,
                  q_lora_rank=None, kv_lora_rank=128, qk_nope_head_dim=32,
                  qk_rope_head_dim=8, v_head_dim=32, rope_theta=50000.0,
                  rope_interleave=True, rope_scaling=None,
                  n_routed_experts=4, num_experts_per_tok=2, n_group=1,
                  topk_group=1, topk_method="noaux_tc", scoring_func="sigmoid",
                  norm_topk_prob=True, routed_scaling_factor=2.446,
                  n_shared_experts=1, moe_intermediate_size=32,
                  intermediate_size=64, first_k_dense_replace=1)
    config["num_hidden_layers"] = 2
    write("moonlight", config, 34)


def glm4_moe():
    """GLM-4.5's layout: grouped-query attention (4 heads, 2 KV heads) of a
    head_dim of its own (16, not 48 / 4), biases on Q, K and V, per-head Q
    and K norms, RoPE on the first half of each head; a dense first layer,
    then 8 experts, sigmoid scores with a selection bias, top 2
    renormalized and scaled by 2.5, one shared expert."""
    config = dict(COMMON, model_type="glm4_moe",
                  architectures=["Glm4MoeForCausalLM"], hidden_size=48,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  partial_rotary_factor=0.5, attention_bias=True,
                  use_qk_norm=True, rope_theta=10000.0, intermediate_size=40,
                  moe_intermediate_size=10, n_routed_experts=8,
                  num_experts_per_tok=2, n_group=1, topk_group=1,
                  norm_topk_prob=True, routed_scaling_factor=2.5,
                  n_shared_experts=1, first_k_dense_replace=1,
                  num_nextn_predict_layers=1)
    write("glm4-moe", config, 33, glm.random_layer, glm.decoder_layer)


if __name__ == "__main__":
    for fixture in sys.argv[1:] or ["deepseek_v3", "deepseek_v2_lite",
                                    "moonlight", "glm4_moe"]:
        globals()[fixture]()
