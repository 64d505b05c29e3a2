#!/usr/bin/env python3
"""Writes the gpt-oss fixture (test/e2e/families/Inputs/gpt-oss/: config.json
+ model.safetensors, small random weights in transformers' BF16 layout:
stacked experts, gate and up interleaved) and its golden
(gpt-oss.logits.bin: little-endian f32 [12, vocab], the logits of every
position of TOKENS). transformers 4.40 has no gpt-oss, so the golden comes
from the NumPy transcription of transformers' GptOss modeling code
(reference/gpt_oss.py, its "hf" form: the sink appended as a logit column,
the top-k-then-softmax router, every expert times its score), in float64
from the bf16 values tfmc reads.

    /usr/bin/python3 test/e2e/make_gpt_oss_goldens.py

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


def main():
    cfg = config()
    rng = np.random.default_rng(41)
    weights = gpt_oss.random_weights(cfg, rng)
    as_bf16 = {k: torch.tensor(np.asarray(v, dtype=np.float32)).to(torch.bfloat16)
               for k, v in weights.items()}
    folder = os.path.join(OUT, "gpt-oss")
    os.makedirs(folder, exist_ok=True)
    safetensors.torch.save_file({k: v.contiguous() for k, v in as_bf16.items()},
                                os.path.join(folder, "model.safetensors"),
                                metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    stored = {k: v.to(torch.float64).numpy() for k, v in as_bf16.items()}
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
    main()
