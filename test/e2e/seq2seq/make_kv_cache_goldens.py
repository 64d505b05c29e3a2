#!/usr/bin/env python3
"""Writes t5.logits-kv-{int8,bf16,f16}.bin (test/e2e/seq2seq/Inputs): the
teacher-forced decoder logits of Inputs/t5 (make_seq2seq_goldens.py's
model, its SOURCE and DECODER tokens) as a narrow KV cache computes them
(tfmc --kv-dtype=int8, bf16, f16): every decoder self-attention reads its
keys and values as the cache stores them, int8 with each position's row of
a head rounded to 127 steps of its largest magnitude, bf16 and f16 each
value rounded to that type. T5 has no rotary positions, so rounding the
outputs of the k and v projections is rounding what the cache stores; the
cross-attention cache stays f32. Every key and value is cached when a
query reads it, so the whole sequence's forward with rounded rows is what
decoding computes.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/seq2seq/make_kv_cache_goldens.py
"""
import os
import sys

import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "Inputs")
SOURCE_TOKENS = [5, 17, 42, 9, 33, 21, 8, 60, 12, 3, 44, 19, 27, 50, 6, 38,
                 11, 25, 1]
DECODER_TOKENS = [0, 12, 7, 30, 5, 48, 22, 9, 41, 3, 17, 58, 33, 6, 20, 14]


sys.path.insert(0, os.path.dirname(HERE))
from make_perplexity_golden import CACHE_ROUNDING  # noqa: E402


def write_logits(dtype, rounding):
    model = tf.T5ForConditionalGeneration.from_pretrained(
        os.path.join(INPUTS, "t5"), torch_dtype=torch.float32).eval()
    heads, head_dim = model.config.num_heads, model.config.d_kv

    def rounded(module, inputs, output):
        rows = output.view(*output.shape[:-1], heads, head_dim)
        return rounding(rows).view(output.shape)

    for block in model.decoder.block:
        attention = block.layer[0].SelfAttention
        attention.k.register_forward_hook(rounded)
        attention.v.register_forward_hook(rounded)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([SOURCE_TOKENS]),
                       decoder_input_ids=torch.tensor([DECODER_TOKENS])).logits
    logits[0].float().numpy().astype("<f4").tofile(
        os.path.join(INPUTS, f"t5.logits-kv-{dtype}.bin"))


def main():
    for dtype in ("int8", "bf16", "f16"):
        write_logits(dtype, CACHE_ROUNDING[f"--kv-{dtype}"])


if __name__ == "__main__":
    main()
