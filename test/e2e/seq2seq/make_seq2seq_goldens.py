#!/usr/bin/env python3
"""Writes the encoder-decoder fixtures (test/e2e/seq2seq/Inputs/<name>/:
config.json + model.safetensors, tiny random weights) and their goldens
with transformers 4.40's model classes (../shared/reference):

- marian/: a MarianMTModel (scaled embeddings, sinusoidal positions,
  post-norm blocks, swish, final_logits_bias);
- <name>.logits.bin: the teacher-forced decoder logits, little-endian f32
  [len(DECODER_TOKENS), vocab], of SOURCE_TOKENS and DECODER_TOKENS.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/seq2seq/make_seq2seq_goldens.py
"""
import os
import sys

import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
SOURCE_TOKENS = [5, 17, 42, 9, 33, 21, 0]
DECODER_TOKENS = [63, 12, 7, 30, 2, 48]


def randomize(model, seed):
    """Weights large enough that the outputs are far from flat; norm scales
    around 1, every bias non-zero. The fixed sinusoidal tables stay."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:
                continue
            noise = torch.randn(p.shape, generator=g)
            is_scale = "layer_norm" in name and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if is_scale else 0.2 * noise)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(
                0.5 * torch.randn(model.final_logits_bias.shape, generator=g))


def write(name, model):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([SOURCE_TOKENS]),
                       decoder_input_ids=torch.tensor([DECODER_TOKENS])).logits[0]
    logits.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {tuple(logits.shape)}, max |l| {logits.abs().max():.2f}")


def main():
    config = tf.MarianConfig(
        vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
        scale_embedding=True, pad_token_id=63, decoder_start_token_id=63,
        eos_token_id=0, activation_function="swish")
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = tf.MarianMTModel(config).eval()
    randomize(model, 1)
    write("marian", model)


if __name__ == "__main__":
    main()
