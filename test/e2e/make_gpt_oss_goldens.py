#!/usr/bin/env python3
"""Writes the gpt-oss fixtures (test/e2e/families/Inputs/gpt-oss/: config.json
+ model.safetensors, small random weights in transformers' BF16 layout:
stacked experts, gate and up interleaved; gpt-oss-mxfp4/: the MXFP4
release's layout, experts as U8 *_blocks and *_scales, 32 features so that
down's rows are whole blocks) and their goldens (gpt-oss.logits.bin,
gpt-oss-mxfp4.logits.bin: little-endian f32 [12, vocab], the logits of
every position of TOKENS). transformers 4.40 has no gpt-oss, so the golden
comes from the NumPy transcription of transformers' GptOss modeling code
(reference/gpt_oss.py, its "hf" form: the sink appended as a logit column,
the top-k-then-softmax router, every expert times its score), in float64
from the bf16 values tfmc reads (and the experts as transformers'
convert_moe_packed_tensors dequantizes the MXFP4 blocks).

    /usr/bin/python3 test/e2e/make_gpt_oss_goldens.py [bf16|mxfp4]

needs NumPy, nothing else (reference/checkpoint.py writes the safetensors).
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import gpt_oss  # noqa: E402
from checkpoint import Stored, as_bf16, stored_values, write_safetensors  # noqa: E402

OUT = os.path.join(HERE, "families", "Inputs")
TOKENS = [1, 17, 42, 5, 63, 0, 28, 9, 33, 12, 50, 7]
VOCAB = 64


def config():
    """gpt-oss-20b's config.json, its widths and depth cut: 4 heads of 8 (2
    KV heads), sliding and full layers alternating with a window of 4 (so
    that the 12 tokens outrun it), YaRN (factor 4 over 16 positions,
    truncate false), 4 experts of 12, 2 a token, clamped at 7."""
    c = gpt_oss.small_config()
    c.update(vocab_size=VOCAB, model_type="gpt_oss",
             architectures=["GptOssForCausalLM"], attention_bias=True,
             hidden_act="silu", tie_word_embeddings=False, bos_token_id=1,
             eos_token_id=2, pad_token_id=3, initial_context_length=16,
             layer_types=gpt_oss.layer_types(c), output_router_logits=False,
             router_aux_loss_coef=0.9, attention_dropout=0.0)
    return c


def write_fixture(name, cfg, weights, extra=None):
    """Writes fixture folder `name` (config.json, model.safetensors): the
    float `weights` as bf16, plus `extra` tensors as given. Returns the
    bf16 values as float64, what the golden multiplies."""
    rounded = {k: as_bf16(v) for k, v in weights.items()}
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      dict(rounded, **(extra or {})))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    return {k: stored_values(v) for k, v in rounded.items()}


def write_mxfp4():
    """gpt-oss-mxfp4: the BF16 fixture's shapes with 32 features an expert
    (down's rows are whole blocks of 32, as gpt-oss-20b's 2880 are), its
    experts in the MXFP4 release's layout, the rest bf16; config.json with
    the release's quantization_config."""
    cfg = config()
    cfg.update(intermediate_size=32, quantization_config={
        "quant_method": "mxfp4", "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router",
            "model.embed_tokens", "lm_head"]})
    weights = gpt_oss.random_weights(cfg, np.random.default_rng(43))
    packed, dequantized = gpt_oss.mxfp4_experts(weights, cfg)
    experts = {k: Stored("U8", v) for k, v in packed.items()}
    kept = {k: v for k, v in weights.items() if k not in dequantized}
    stored = write_fixture("gpt-oss-mxfp4", cfg, kept, experts)
    stored.update(dequantized)
    logits = gpt_oss.forward(TOKENS, stored, cfg, form="hf")
    logits.astype("<f4").tofile(os.path.join(OUT, "gpt-oss-mxfp4.logits.bin"))
    print(f"gpt-oss-mxfp4: logits {logits.shape}, max |logit| "
          f"{np.abs(logits).max():.2f}")


def write_bf16():
    cfg = config()
    rng = np.random.default_rng(41)
    stored = write_fixture("gpt-oss", cfg, gpt_oss.random_weights(cfg, rng))
    logits = gpt_oss.forward(TOKENS, stored, cfg, form="hf")
    logits.astype("<f4").tofile(os.path.join(OUT, "gpt-oss.logits.bin"))
    # The cached form (a ring for the sliding layers), prefill of 3 and
    # decodes, agrees with the forward pass: what tfm-kv-cache must match.
    cache = {"ring": True}
    steps = [gpt_oss.forward(TOKENS[:3], stored, cfg, cache, 0)]
    for i in range(3, len(TOKENS)):
        steps.append(gpt_oss.forward(TOKENS[i:i + 1], stored, cfg, cache, i))
    cached = np.concatenate(steps)
    print(f"gpt-oss: logits {logits.shape}, max |logit| {np.abs(logits).max():.2f}, "
          f"cached form off by {np.abs(cached - logits).max():.1e}")


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("bf16", "all"):
        write_bf16()
    if which in ("mxfp4", "all"):
        write_mxfp4()
