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

needs numpy and torch (for safetensors), nothing else.
"""
import json
import os
import sys

import numpy as np
import safetensors.torch
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import gpt_oss  # noqa: E402

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


def mxfp4_experts(weights, cfg):
    """The stacked experts of every layer as the MXFP4 release stores them:
    each output row's blocks of 32 quantized as ggml's quantize_row_mxfp4_ref
    does (the one MXFP4 encoder at hand), then laid out as Hugging Face's
    *_blocks [E, rows, G, 16] (element 2j in byte j's low nibble) and
    *_scales [E, rows, G]. Returns (U8 tensors, the dequantized [in, out]
    stacks the golden multiplies)."""
    stored, values = {}, {}
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d.mlp.experts." % l
        for name in ("gate_up_proj", "down_proj"):
            rows = np.swapaxes(weights[p + name], 1, 2)  # [E, out, in]
            E, out, inp = rows.shape
            packed = np.stack([gpt_oss.ggml_quantize_row(r).reshape(-1, gpt_oss.BLOCK_BYTES)
                               for r in rows.reshape(E * out, inp)])
            blocks, scales = zip(*(gpt_oss.ggml_to_hf_block(r) for r in packed))
            blocks = np.stack(blocks).reshape(E, out, inp // 32, 16)
            scales = np.stack(scales).reshape(E, out, inp // 32)
            stored[p + name + "_blocks"] = torch.tensor(blocks)
            stored[p + name + "_scales"] = torch.tensor(scales)
            values[p + name] = gpt_oss.hf_dequant(blocks, scales)
    return stored, values


def write_fixture(name, cfg, weights, extra=None):
    """Writes fixture folder `name` (config.json, model.safetensors): the
    float `weights` as bf16, plus `extra` tensors as given. Returns the
    bf16 values as float64, what the golden multiplies."""
    as_bf16 = {k: torch.tensor(np.asarray(v, dtype=np.float32)).to(torch.bfloat16)
               for k, v in weights.items()}
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    tensors = dict(as_bf16, **(extra or {}))
    safetensors.torch.save_file({k: v.contiguous() for k, v in tensors.items()},
                                os.path.join(folder, "model.safetensors"),
                                metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    return {k: v.to(torch.float64).numpy() for k, v in as_bf16.items()}


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
    experts, dequantized = mxfp4_experts(weights, cfg)
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
