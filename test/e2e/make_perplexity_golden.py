#!/usr/bin/env python3
"""Writes the perplexity golden of test/e2e/weight-formats.test: Hugging
Face's LlamaForCausalLM (transformers 4.40.2, ../shared/reference) on
stories260K-hf, scoring ../shared/data/tinystories-eval.txt as a compiled
model's --perplexity does: the text's ids (LlamaTokenizer, no BOS) cut into
windows of BOS + 511 tokens, every token after a window's BOS scored from
those before it; perplexity = exp(mean negative log-likelihood).

    bash ../shared/reference/setup.sh; source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/make_perplexity_golden.py ../shared > \\
        test/e2e/Inputs/stories260K.perplexity.json

With --kv-int8, every attention reads its keys (after RoPE) and values as
an int8 KV cache stores them (tfmc --kv-dtype=int8): each position's row
of a KV head rounded to 127 steps of its largest magnitude. Every key and
value of a window is in the cache when a query reads it, so a whole
window's forward with rounded keys and values is what decoding through
the cache computes (test/e2e/kv-cache-int8.test):

    /usr/bin/python3 test/e2e/make_perplexity_golden.py ../shared \\
        --kv-int8 > test/e2e/Inputs/stories260K.perplexity-kv-int8.json

With --kv-bf16 or --kv-f16, keys and values are rounded to that type (to
nearest, ties to even: torch's conversion) as a bf16 or f16 KV cache
(tfmc --kv-dtype=bf16, f16; test/e2e/kv-cache-half.test) stores them.
"""
import json
import math
import sys

import torch
import transformers.models.llama.modeling_llama as modeling_llama
from transformers import AutoTokenizer, LlamaForCausalLM


def round_rows_to_int8(states):
    """tfm.quantize_rows then tfm.dequantize_rows, in f32: codes
    round-half-even(x * (127 / max|x|)), values code * (max|x| / 127)."""
    largest = states.abs().amax(dim=-1, keepdim=True)
    inverse = torch.where(largest > 0, 127.0 / largest,
                          torch.zeros_like(largest))
    codes = torch.round(states * inverse).clamp(-127, 127)
    return codes * (largest / 127.0)


def read_keys_and_values_rounded(rounding):
    """LlamaAttention passes its keys and values through repeat_kv
    (grouped-query heads) right before using them: round them there."""
    repeat_kv = modeling_llama.repeat_kv
    modeling_llama.repeat_kv = lambda states, n_rep: repeat_kv(
        rounding(states), n_rep)


CACHE_ROUNDING = {
    "--kv-int8": round_rows_to_int8,
    "--kv-bf16": lambda states: states.to(torch.bfloat16).to(torch.float32),
    "--kv-f16": lambda states: states.to(torch.float16).to(torch.float32),
}


def main():
    shared = sys.argv[1]
    for flag in sys.argv[2:]:
        read_keys_and_values_rounded(CACHE_ROUNDING[flag])
    model_dir = f"{shared}/models/stories260K-hf"
    tokenizer = AutoTokenizer.from_pretrained(model_dir, use_fast=False)
    model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    with open(f"{shared}/data/tinystories-eval.txt", encoding="utf-8") as f:
        text = f.read()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    window = model.config.max_position_embeddings
    bos = model.config.bos_token_id
    total, scored = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(ids), window - 1):
            chunk = [bos] + ids[start:start + window - 1]
            logits = model(torch.tensor([chunk])).logits[0].double()
            logp = torch.log_softmax(logits, dim=-1)
            for i in range(len(chunk) - 1):
                total -= logp[i, chunk[i + 1]].item()
            scored += len(chunk) - 1
    print(json.dumps({"perplexity": round(math.exp(total / scored), 6),
                      "mean_nll": round(total / scored, 6),
                      "tokens": scored, "window": window}))


if __name__ == "__main__":
    main()
