#!/usr/bin/env python3
"""Writes the encoder-decoder fixtures (test/e2e/seq2seq/Inputs/<name>/:
config.json + model.safetensors, tiny random weights) and their goldens
with transformers 4.40's model classes (../shared/reference):

- marian/: a MarianMTModel (scaled embeddings, sinusoidal positions,
  post-norm blocks, swish, final_logits_bias);
- bart/: a BartForConditionalGeneration (learned positions from row 2,
  layernorm_embedding, GELU);
- <name>.logits.bin: the teacher-forced decoder logits, little-endian f32
  [decoder tokens, vocab], of SOURCE_TOKENS and DECODER_TOKENS (BART's
  start from its decoder start token 2);
- <name>.greedy.txt: per line the ids generate() picks greedily for one of
  GREEDY_SOURCES (GREEDY_TOKENS new tokens at most, no forced or suppressed
  tokens), after the decoder start token; <name>.beams.txt the same of a
  beam search of each width in BEAMS (length penalty 1, no early
  stopping), widths in turn; <name>.rules.txt greedy and then each width
  again with generation rules: no_repeat_ngram_size 2, min_new_tokens 3,
  SUPPRESSED as bad words, the end-of-sequence token forced last.

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
BART_DECODER_TOKENS = [2, 12, 7, 30, 5, 48]
GREEDY_TOKENS = 12
GREEDY_SOURCES = [SOURCE_TOKENS, [7, 3, 50, 0], [30, 31, 0], [60, 5, 0]]
BEAMS = [2, 4]
SUPPRESSED = [61, 9]  # bad_words_ids of one token each


def randomize(model, seed):
    """Weights large enough that the outputs are far from flat and greedy
    decoding does not settle on one token at once; norm scales around 1,
    every bias non-zero. The fixed sinusoidal tables stay."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name and isinstance(model, tf.MarianMTModel):
                continue
            noise = torch.randn(p.shape, generator=g)
            is_scale = "layer_norm" in name and name.endswith("weight")
            p.copy_(1 + 0.5 * noise if is_scale else 0.6 * noise)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(
                0.1 * torch.randn(model.final_logits_bias.shape, generator=g))


def flatten_head(model, eos, boost):
    """A separate, smaller LM head and a raised end-of-sequence bias: random
    models are otherwise so sure of one token that greedy and beam search
    agree and never stop; this gives the searches choices to differ on."""
    with torch.no_grad():
        model.lm_head.weight.mul_(0.5)
        model.final_logits_bias[0, eos] += boost


def write(name, model, decoder_tokens=DECODER_TOKENS):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    # No generation rules by default (MarianConfig forces the end token):
    # the goldens ask for each explicitly.
    model.generation_config.forced_eos_token_id = None
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([SOURCE_TOKENS]),
                       decoder_input_ids=torch.tensor([decoder_tokens])).logits[0]
    logits.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {tuple(logits.shape)}, max |l| {logits.abs().max():.2f}")
    no_rules = dict(forced_eos_token_id=None, bad_words_ids=None)
    rules = dict(no_repeat_ngram_size=2, min_new_tokens=3,
                 bad_words_ids=[[s] for s in SUPPRESSED],
                 forced_eos_token_id=model.config.eos_token_id)
    write_searches(model, name + ".greedy.txt", [1], no_rules)
    write_searches(model, name + ".beams.txt", BEAMS, no_rules)
    write_searches(model, name + ".rules.txt", [1] + BEAMS, rules)


def write_searches(model, filename, widths, settings):
    """Per beam width (greedy for 1), per source in GREEDY_SOURCES, the ids
    generate() returns after the decoder start token."""
    with open(os.path.join(OUT, filename), "w") as f:
        for beams in widths:
            for source in GREEDY_SOURCES:
                with torch.no_grad():
                    ids = model.generate(torch.tensor([source]),
                                         num_beams=beams, do_sample=False,
                                         max_new_tokens=GREEDY_TOKENS,
                                         length_penalty=1.0,
                                         early_stopping=False, **settings)[0]
                f.write(" ".join(map(str, ids.tolist()[1:])) + "\n")
                print(f"{filename}: {beams} beams {ids.tolist()}")


def main():
    config = tf.MarianConfig(
        vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
        scale_embedding=True, pad_token_id=63, decoder_start_token_id=63,
        eos_token_id=0, activation_function="swish",
        tie_word_embeddings=False)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = tf.MarianMTModel(config).eval()
    randomize(model, 1)
    flatten_head(model, eos=0, boost=1.8)
    write("marian", model)
    config = tf.BartConfig(
        vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
        pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2, forced_eos_token_id=None,
        tie_word_embeddings=False)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = tf.BartForConditionalGeneration(config).eval()
    randomize(model, 2)
    flatten_head(model, eos=2, boost=5.5)
    write("bart", model, decoder_tokens=BART_DECODER_TOKENS)


if __name__ == "__main__":
    main()
