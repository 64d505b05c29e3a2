#!/usr/bin/env python3
"""Writes the Whisper fixture (test/e2e/seq2seq/Inputs/whisper/: a tiny
random WhisperForConditionalGeneration, config.json + model.safetensors +
generation_config.json + preprocessor_config.json, and a WhisperTokenizer:
GPT-2's 256 byte tokens, byte_level.WHISPER_MERGES, <|endoftext|> and the prompt's
special tokens) and its goldens with transformers 4.40
(../shared/reference):

- whisper.features.bin: WhisperFeatureExtractor's log-mel features of 1 s
  of a two-tone signal (chunk_length 1: 100 frames, the encoder's 2 x 50
  positions), little-endian f32 [80, 100];
- whisper.logits.bin: the decoder's logits, teacher-forced with
  DECODER_TOKENS, f32 [positions, vocab];
- whisper.greedy.txt: the ids generate() picks greedily after the decoder
  start token: the forced prompt (language, task, no timestamps), then at
  most NEW_TOKENS, with suppress_tokens (the special tokens, and bytes past
  printable ASCII so that every output is plain text) and
  begin_suppress_tokens;
  whisper.text.txt the text decode(skip_special_tokens=True) makes of them;
  whisper.beams.txt the same of beam searches of 2 and 4 beams;
- whisper.previous.txt: the greedy ids and 2 beams' after each of
  PREVIOUS_TEXTS (get_prompt_ids: <|startofprev|>, then " " + the text,
  its last 19 tokens as OpenAI keeps them) before the decoder start token,
  begin_suppress_tokens applied to the first new token.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/seq2seq/make_whisper_goldens.py
"""
import os

import numpy as np
import torch
import transformers as tf

from byte_level import write_whisper_tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
SPECIALS = ["<|startoftranscript|>", "<|en|>", "<|transcribe|>",
            "<|notimestamps|>", "<|startofprev|>"]


FOLDER = os.path.join(OUT, "whisper")
TOKENIZER, ALPHABET = write_whisper_tokenizer(FOLDER, SPECIALS)
EOS = TOKENIZER.convert_tokens_to_ids("<|endoftext|>")
START, LANGUAGE, TASK, NO_TIMESTAMPS, PREVIOUS = TOKENIZER.convert_tokens_to_ids(
    SPECIALS)
PROMPT = [LANGUAGE, TASK, NO_TIMESTAMPS]
DECODER_TOKENS = [START] + PROMPT + [72, 101, 108, 259, 32]
SUPPRESSED = ([START, LANGUAGE, TASK, NO_TIMESTAMPS, PREVIOUS] +
              list(range(0, 32)) + list(range(127, 256)))
BEGIN_SUPPRESSED = [32, EOS]
NEW_TOKENS = 12
# Previous text (the API's `prompt`): a short one, and one longer than the
# 40-position decoder's half less one (19 tokens), whose last 19 are kept.
PREVIOUS_TEXTS = ["  the cat sat on the mat ",
                  "in the beginning there was the word and the word was "
                  "with the sea"]


def tones(seconds, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return (0.4 * np.sin(2 * np.pi * 440 * t) +
            0.2 * np.sin(2 * np.pi * 1850 * t)).astype(np.float32)


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name and "encoder" in name:
                continue  # the sinusoids transformers initializes
            noise = torch.randn(p.shape, generator=g)
            is_scale = "layer_norm" in name and name.endswith("weight")
            p.copy_(1 + 0.3 * noise if is_scale else 0.5 * noise)


def main():
    config = tf.WhisperConfig(
        vocab_size=len(TOKENIZER), num_mel_bins=80, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, d_model=32,
        encoder_ffn_dim=48, decoder_ffn_dim=48, max_source_positions=50,
        max_target_positions=40, pad_token_id=EOS, bos_token_id=EOS,
        eos_token_id=EOS, decoder_start_token_id=START,
        suppress_tokens=SUPPRESSED, begin_suppress_tokens=BEGIN_SUPPRESSED)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = tf.WhisperForConditionalGeneration(config).eval()
    randomize(model, 8)
    extractor = tf.WhisperFeatureExtractor(feature_size=80, chunk_length=1)
    folder = FOLDER
    generation = model.generation_config
    generation.forced_decoder_ids = [[i + 1, t] for i, t in enumerate(PROMPT)]
    generation.suppress_tokens = SUPPRESSED
    generation.begin_suppress_tokens = BEGIN_SUPPRESSED
    model.save_pretrained(folder, safe_serialization=True)
    extractor.save_pretrained(folder)

    features = extractor(tones(1.0), sampling_rate=16000,
                         return_tensors="pt").input_features
    features[0].numpy().astype("<f4").tofile(
        os.path.join(OUT, "whisper.features.bin"))
    with torch.no_grad():
        logits = model(input_features=features,
                       decoder_input_ids=torch.tensor([DECODER_TOKENS])
                       ).logits[0]
    logits.numpy().astype("<f4").tofile(os.path.join(OUT, "whisper.logits.bin"))
    print(f"features {tuple(features.shape)}, logits {tuple(logits.shape)}")
    # GenerationMixin's generate (Whisper's own adds timestamp and
    # long-form logic): the prompt as decoder_input_ids, then the
    # suppressions.
    with torch.no_grad():
        ids = tf.GenerationMixin.generate(
            model, features,
            decoder_input_ids=torch.tensor([[START] + PROMPT]),
            forced_decoder_ids=None, do_sample=False, num_beams=1,
            max_new_tokens=NEW_TOKENS)[0].tolist()
    with open(os.path.join(OUT, "whisper.greedy.txt"), "w") as f:
        f.write(" ".join(map(str, ids[1:])) + "\n")
    # Beam search after the prompt (length penalty 1, no early stopping).
    with open(os.path.join(OUT, "whisper.beams.txt"), "w") as f:
        for beams in (2, 4):
            with torch.no_grad():
                beam_ids = tf.GenerationMixin.generate(
                    model, features,
                    decoder_input_ids=torch.tensor([[START] + PROMPT]),
                    forced_decoder_ids=None, do_sample=False, num_beams=beams,
                    length_penalty=1.0, early_stopping=False,
                    max_new_tokens=NEW_TOKENS)[0].tolist()
            f.write(" ".join(map(str, beam_ids[1:])) + "\n")
            print(f"{beams} beams", beam_ids)
    with open(os.path.join(OUT, "whisper.previous.txt"), "w") as f:
        for previous in PREVIOUS_TEXTS:
            prompt_ids = TOKENIZER.get_prompt_ids(previous).tolist()
            prompt_ids = prompt_ids[:1] + prompt_ids[1:][-19:]
            start = prompt_ids + [START] + PROMPT
            for beams in (1, 2):
                with torch.no_grad():
                    after = tf.GenerationMixin.generate(
                        model, features, decoder_input_ids=torch.tensor([start]),
                        forced_decoder_ids=None, do_sample=False,
                        num_beams=beams, length_penalty=1.0,
                        early_stopping=False,
                        max_new_tokens=NEW_TOKENS)[0].tolist()
                f.write(" ".join(map(str, after[len(prompt_ids) + 1:])) + "\n")
                print("previous", len(prompt_ids), beams, after)
    text = TOKENIZER.decode(ids, skip_special_tokens=True,
                            clean_up_tokenization_spaces=False)
    with open(os.path.join(OUT, "whisper.text.txt"), "w") as f:
        f.write(text + "\n")
    print("greedy", ids, repr(text))


if __name__ == "__main__":
    main()
