#!/usr/bin/env python3
"""Writes bert.pooled.bin: BertModel's pooler_output (dense + tanh on the
first token's state) for the bert fixture (make_encoder_goldens.py) on its
TOKENS and TYPES, little-endian f32 [hidden], with transformers 4.40
(../shared/reference). Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/encoders/make_pooler_golden.py
"""
import os

import torch
import transformers as tf

from make_encoder_goldens import OUT, TOKENS, TYPES


def main():
    model = tf.BertModel.from_pretrained(os.path.join(OUT, "bert")).eval()
    with torch.no_grad():
        pooled = model(torch.tensor([TOKENS]),
                       token_type_ids=torch.tensor([TYPES])).pooler_output[0]
    pooled.numpy().astype("<f4").tofile(os.path.join(OUT, "bert.pooled.bin"))
    print("bert: pooled", tuple(pooled.shape))


if __name__ == "__main__":
    main()
