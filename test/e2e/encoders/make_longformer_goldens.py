#!/usr/bin/env python3
"""Writes the Longformer fixtures (test/e2e/encoders/Inputs/longformer*/:
config.json + model.safetensors, tiny random weights) and their goldens
with transformers 4.40's Longformer classes (../shared/reference):

    longformer.hidden.bin         LongformerModel, TOKENS, no global token
    longformer.global.hidden.bin  the same with GLOBAL as global_attention_mask
    longformer.pooled.bin         its pooler_output with GLOBAL
    longformer-mlm.logits.bin     LongformerForMaskedLM, MLM_TOKENS, MLM_GLOBAL
    longformer-sequence.logits.bin  LongformerForSequenceClassification (its
                                  own default: the first token global)
    longformer-tokens.logits.bin  LongformerForTokenClassification, GLOBAL

all little-endian f32. The windows (attention_window 4 and 8, one-sided 2
and 4; 6 for the classifiers, as one integer) are far shorter than the
70 tokens, which span three of the kernel's query blocks and two key
tiles; transformers pads the input to a multiple of the window and masks
the padding, which changes nothing for the real tokens. Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/encoders/make_longformer_goldens.py
"""
import os
import random

import torch
import transformers as tf

from make_encoder_goldens import OUT, random_model

rng = random.Random(57)
TOKENS = [0] + [rng.randrange(3, 64) for _ in range(68)] + [2]
GLOBAL = [1 if i in (0, 5, 41, 69) else 0 for i in range(len(TOKENS))]
MLM_TOKENS = TOKENS[:40]
MLM_GLOBAL = [1 if i in (0, 3) else 0 for i in range(40)]
SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=48,
             num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=80, type_vocab_size=1, pad_token_id=1,
             layer_norm_eps=1e-5, hidden_act="gelu")
LABELS = {"id2label": {"0": "negative", "1": "neutral", "2": "positive"},
          "label2id": {"negative": 0, "neutral": 1, "positive": 2}}


def save(name, model):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)


def dump(tensor, name):
    tensor.detach().numpy().astype("<f4").tofile(os.path.join(OUT, name))
    print(f"{name}: {tuple(tensor.shape)}, max |x| {tensor.abs().max():.2f}")


def run(model, tokens, global_mask=None):
    extra = {}
    if global_mask is not None:
        extra["global_attention_mask"] = torch.tensor([global_mask])
    with torch.no_grad():
        return model(torch.tensor([tokens]), **extra)


def main():
    config = tf.LongformerConfig(**SIZES, attention_window=[4, 8])
    model = random_model(tf.LongformerModel, config, 57)
    save("longformer", model)
    dump(run(model, TOKENS).last_hidden_state[0], "longformer.hidden.bin")
    out = run(model, TOKENS, GLOBAL)
    dump(out.last_hidden_state[0], "longformer.global.hidden.bin")
    dump(out.pooler_output[0], "longformer.pooled.bin")

    model = random_model(tf.LongformerForMaskedLM, config, 58)
    save("longformer-mlm", model)
    dump(run(model, MLM_TOKENS, MLM_GLOBAL).logits[0],
         "longformer-mlm.logits.bin")

    config = tf.LongformerConfig(**SIZES, attention_window=6, **LABELS)
    model = random_model(tf.LongformerForSequenceClassification, config, 59)
    save("longformer-sequence", model)
    dump(run(model, TOKENS).logits[0], "longformer-sequence.logits.bin")
    model = random_model(tf.LongformerForTokenClassification, config, 60)
    save("longformer-tokens", model)
    dump(run(model, TOKENS, GLOBAL).logits[0], "longformer-tokens.logits.bin")

    print("TOKENS:", " ".join(map(str, TOKENS)))
    print("GLOBAL:", " ".join(map(str, GLOBAL)))
    print("MLM_TOKENS:", " ".join(map(str, MLM_TOKENS)))
    print("MLM_GLOBAL:", " ".join(map(str, MLM_GLOBAL)))


if __name__ == "__main__":
    main()
