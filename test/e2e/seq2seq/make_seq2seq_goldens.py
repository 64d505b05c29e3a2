#!/usr/bin/env python3
"""Writes the encoder-decoder fixtures (test/e2e/seq2seq/Inputs/<name>/:
config.json + model.safetensors, tiny random weights) and their goldens
with transformers 4.40's model classes (../shared/reference):

- marian/: a MarianMTModel (scaled embeddings, sinusoidal positions,
  post-norm blocks, swish, final_logits_bias);
- bart/: a BartForConditionalGeneration (learned positions from row 2,
  layernorm_embedding, GELU);
- mbart/: an MBartForConditionalGeneration (BART's embeddings with
  pre-norm blocks and final LayerNorms), forced_bos_token_id set in its
  generation config, which every search below follows;
- t5/: a T5ForConditionalGeneration v1.0 (ReLU FFN, LM head tied to the
  shared table, its input scaled by d_model^-0.5) and t5-v1.1/ (gated-gelu,
  an untied head), with few relative-position buckets and a short
  max_distance so that the sources and decoder tokens reach the
  logarithmic buckets and beyond; their sources end with T5's </s> (1);
- <name>.logits.bin: the teacher-forced decoder logits, little-endian f32
  [decoder tokens, vocab], of SOURCE_TOKENS and DECODER_TOKENS (BART's
  start from its decoder start token 2);
- <name>.greedy.txt: per line the ids generate() picks greedily for one of
  GREEDY_SOURCES (GREEDY_TOKENS new tokens at most, no forced or suppressed
  tokens), after the decoder start token; <name>.beams.txt the same of a
  beam search of each width in BEAMS (length penalty 1, no early
  stopping), widths in turn; <name>.rules.txt greedy and then each width
  again with generation rules: no_repeat_ngram_size 2, min_new_tokens 3,
  SUPPRESSED as bad words, the end-of-sequence token forced last;
  marian.bad-words.txt greedy and 2 beams with BAD_WORDS as bad_words_ids.

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
MBART_TARGET_LANGUAGE = 60  # forced_bos_token_id: the first new token
# Marian's bad words of several tokens (the decoder start token 63 counts,
# and transformers drops [eos]), and one single token.
BAD_WORDS = [[61, 61], [9, 9], [63, 47], [47, 47, 47], [0], [5]]
T5_SOURCE_TOKENS = [5, 17, 42, 9, 33, 21, 8, 60, 12, 3, 44, 19, 27, 50, 6,
                    38, 11, 25, 1]
T5_DECODER_TOKENS = [0, 12, 7, 30, 5, 48, 22, 9, 41, 3, 17, 58, 33, 6, 20,
                     14]
T5_SOURCES = [T5_SOURCE_TOKENS, [7, 3, 50, 1], [30, 31, 1], [60, 5, 1]]


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


def write(name, model, decoder_tokens=DECODER_TOKENS,
          source_tokens=SOURCE_TOKENS, sources=GREEDY_SOURCES):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    # No generation rules by default (MarianConfig forces the end token):
    # the goldens ask for each explicitly.
    model.generation_config.forced_eos_token_id = None
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([source_tokens]),
                       decoder_input_ids=torch.tensor([decoder_tokens])).logits[0]
    logits.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {tuple(logits.shape)}, max |l| {logits.abs().max():.2f}")
    no_rules = dict(forced_eos_token_id=None, bad_words_ids=None)
    rules = dict(no_repeat_ngram_size=2, min_new_tokens=3,
                 bad_words_ids=[[s] for s in SUPPRESSED],
                 forced_eos_token_id=model.config.eos_token_id)
    write_searches(model, name + ".greedy.txt", [1], no_rules, sources)
    write_searches(model, name + ".beams.txt", BEAMS, no_rules, sources)
    write_searches(model, name + ".rules.txt", [1] + BEAMS, rules, sources)
    if name == "marian":
        bad_words = dict(no_rules, bad_words_ids=BAD_WORDS)
        write_searches(model, name + ".bad-words.txt", [1, 2], bad_words,
                       sources)


def write_searches(model, filename, widths, settings, sources):
    """Per beam width (greedy for 1), per source, the ids generate()
    returns after the decoder start token."""
    with open(os.path.join(OUT, filename), "w") as f:
        for beams in widths:
            for source in sources:
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
    config = tf.MBartConfig(
        vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
        scale_embedding=True, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2, forced_eos_token_id=None,
        forced_bos_token_id=MBART_TARGET_LANGUAGE, tie_word_embeddings=False)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = tf.MBartForConditionalGeneration(config).eval()
    randomize(model, 8)
    flatten_head(model, eos=2, boost=5.5)
    write("mbart", model, decoder_tokens=BART_DECODER_TOKENS)
    for name, ffn, tied, seed in [("t5", "relu", True, 3),
                                  ("t5-v1.1", "gated-gelu", False, 4)]:
        config = tf.T5Config(
            vocab_size=64, d_model=32, d_kv=12, d_ff=48, num_layers=2,
            num_decoder_layers=3, num_heads=3,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=12, feed_forward_proj=ffn,
            tie_word_embeddings=tied, pad_token_id=0, eos_token_id=1,
            decoder_start_token_id=0)
        config._attn_implementation = "eager"
        torch.manual_seed(0)
        model = tf.T5ForConditionalGeneration(config).eval()
        randomize(model, seed)
        with torch.no_grad():
            # Unscaled scores of randomize()'s weights saturate the softmax
            # and leave float32 results (transformers' too) 1e-4 from the
            # exact ones; smaller queries keep them well conditioned.
            for parameter, values in model.named_parameters():
                if parameter.endswith(".q.weight"):
                    values.mul_(0.25)
            # See flatten_head; T5 has no logits bias.
            model.lm_head.weight.mul_(0.3 if tied else 0.15)
        write(name, model, decoder_tokens=T5_DECODER_TOKENS,
              source_tokens=T5_SOURCE_TOKENS, sources=T5_SOURCES)


if __name__ == "__main__":
    main()
