#!/usr/bin/env python3
"""Writes the encoder fixtures (test/e2e/encoders/Inputs/<name>/: config.json
+ model.safetensors, tiny random weights) and their goldens
(<name>.hidden.bin: little-endian f32 [len(TOKENS), hidden], the last hidden
state of TOKENS with TYPES as token types) with the Hugging Face
transformers 4.40 model classes (../shared/reference). Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/encoders/make_encoder_goldens.py
"""
import os

import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
TOKENS = [2, 17, 42, 5, 63, 0, 28, 9, 33, 3]
TYPES = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=48,
             num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=16, type_vocab_size=2)


def randomize(model, seed):
    """Weights large enough that the outputs are far from flat; norm scales
    around 1 and every bias non-zero."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            is_scale = "LayerNorm" in name and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if is_scale else 0.2 * noise)


def write(name, model):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        hidden = model(torch.tensor([TOKENS]),
                       token_type_ids=torch.tensor([TYPES])).last_hidden_state[0]
    hidden.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".hidden.bin"))
    print(f"{name}: hidden {tuple(hidden.shape)}, max |h| {hidden.abs().max():.2f}")


def main():
    config = tf.BertConfig(**SIZES, hidden_act="gelu")
    config._attn_implementation = "eager"
    torch.manual_seed(1)
    model = tf.BertModel(config).eval()
    randomize(model, 1)
    write("bert", model)


if __name__ == "__main__":
    main()
