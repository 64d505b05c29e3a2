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
"""
import json
import math
import sys

import torch
from transformers import AutoTokenizer, LlamaForCausalLM


def main():
    shared = sys.argv[1]
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
