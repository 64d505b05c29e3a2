#!/usr/bin/env python3
"""Writes the tokenized CLIP fixture (test/e2e/clip/Inputs/clip-tokenized/)
and its goldens with transformers 4.40's classes (../shared/reference):

- vocab.json and merges.txt in CLIP's format (the 256 byte characters, the
  same with "</w>", the merges learned here from CORPUS (54), then
  <|startoftext|> and <|endoftext|>), tokenizer_config.json naming
  CLIPTokenizer: a vocabulary of 568 tokens;
- a CLIPModel over it (as make_clip_goldens.py's, the text tower's vocabulary
  that size, 48 positions, eos_token_id the end-of-text's, as current
  configs say), and preprocessor_config.json;
- clip-tokenized.tokenizer.json: the same vocabulary as the fast
  tokenizer's tokenizer.json (written here: this reference has no
  tokenizers library to convert it);
- clip-tokenized.texts.txt: TEXTS, one a line;
- clip-tokenized.ids.txt: CLIPTokenizer's ids of each line of TEXTS (this
  reference has neither ftfy nor tokenizers, so the slow tokenizer's
  BasicTokenizer normalizes; on these texts it agrees with the fast
  tokenizer's NFC, whitespace and lowercase normalizer);
- clip-tokenized.text.embeds.bin: get_text_features of TEXTS[0] [24];
- clip-tokenized.similarity.txt: CLIPModel's logits_per_image of
  ../vision/Inputs/images/photo.png (CLIPImageProcessor) against TEXTS[:3],
  and their softmax.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/clip/make_clip_tokenizer.py
"""
import collections
import json
import os

import torch
import transformers as tf
from PIL import Image
from transformers.models.clip.tokenization_clip import bytes_to_unicode

import make_clip_goldens as goldens

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
NAME = "clip-tokenized"
CORPUS = ("a photo of a cat . a photo of a dog . the dog 's ball , the "
          "cat's toys ! two dogs and 3 cats ; photos of the sea . "
          "a diagram of a teapot , an image of the city at night")
TEXTS = ["a photo of a cat",
         "a photo of a dog",
         "a diagram",
         "The Dog's   BALL, two\tdogs!",
         "Café 42 & crème brûlée: it'll be fine",
         "<|startoftext|>a cat<|endoftext|> photo",
         "x"]
MERGES = 120


def learn_merges(corpus, count):
    byte_encoder = bytes_to_unicode()
    words = collections.Counter(
        tuple(byte_encoder[b] for b in word.encode("utf-8"))
        for word in corpus.lower().split())
    words = {word[:-1] + (word[-1] + "</w>",): n for word, n in words.items()}
    merges = []
    for _ in range(count):
        pairs = collections.Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs.items(), key=lambda item: (item[1], item[0]))[0]
        merges.append(best)
        merged = {}
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] = n
        words = merged
    return merges


def write_tokenizer_json(vocab, merges):
    """The same vocabulary as CLIPTokenizerFast's tokenizer.json spells it
    (as openai/clip-vit-base-patch32's: words end in "</w>", NFC, whitespace
    and lowercase normalizers, CLIP's split), for the fast reader's test."""
    special = [{"id": vocab[t], "content": t, "single_word": False,
                "lstrip": False, "rstrip": False, "normalized": True,
                "special": True}
               for t in ["<|startoftext|>", "<|endoftext|>"]]
    split = (r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|"
             r"[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+")
    document = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFC"},
            {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
            {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split},
             "behavior": "Removed", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "RobertaProcessing",
                           "sep": ["<|endoftext|>", vocab["<|endoftext|>"]],
                           "cls": ["<|startoftext|>",
                                   vocab["<|startoftext|>"]],
                           "trim_offsets": False, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None,
                  "unk_token": "<|endoftext|>",
                  "continuing_subword_prefix": "",
                  "end_of_word_suffix": "</w>", "fuse_unk": False,
                  "byte_fallback": False, "vocab": vocab,
                  "merges": [left + " " + right for left, right in merges]}}
    with open(os.path.join(OUT, NAME + ".tokenizer.json"), "w") as f:
        json.dump(document, f, ensure_ascii=False)


def main():
    directory = os.path.join(OUT, NAME)
    os.makedirs(directory, exist_ok=True)
    characters = list(bytes_to_unicode().values())
    tokens = characters + [c + "</w>" for c in characters]
    merges = learn_merges(CORPUS, MERGES)
    for left, right in merges:
        if left + right not in tokens:
            tokens.append(left + right)
    tokens += ["<|startoftext|>", "<|endoftext|>"]
    vocab = {token: i for i, token in enumerate(tokens)}
    with open(os.path.join(directory, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(directory, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
        for left, right in merges:
            f.write(left + " " + right + "\n")
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "CLIPTokenizer",
                   "bos_token": "<|startoftext|>",
                   "eos_token": "<|endoftext|>",
                   "unk_token": "<|endoftext|>",
                   "pad_token": "<|endoftext|>"}, f, indent=2)
    write_tokenizer_json(vocab, merges)
    tokenizer = tf.CLIPTokenizer(os.path.join(directory, "vocab.json"),
                                 os.path.join(directory, "merges.txt"))
    with open(os.path.join(OUT, NAME + ".texts.txt"), "w") as f:
        f.write("".join(text + "\n" for text in TEXTS))
    with open(os.path.join(OUT, NAME + ".ids.txt"), "w") as f:
        for text in TEXTS:
            f.write(" ".join(map(str, tokenizer(text).input_ids)) + "\n")
    print(len(vocab), "tokens,", len(merges), "merges")

    text = dict(goldens.TEXT, vocab_size=len(vocab), max_position_embeddings=48,
                eos_token_id=vocab["<|endoftext|>"],
                bos_token_id=vocab["<|startoftext|>"],
                pad_token_id=vocab["<|endoftext|>"])
    with torch.no_grad():
        model = goldens.save(NAME, tf.CLIPModel(tf.CLIPConfig(
            text_config=text, vision_config=goldens.VISION,
            projection_dim=24)), 4)
        ids = torch.tensor([tokenizer(TEXTS[0]).input_ids])
        goldens.write(NAME + ".text.embeds.bin",
                      model.get_text_features(input_ids=ids)[0])
        processor = tf.CLIPImageProcessor(**goldens.PREPROCESSOR)
        photo = Image.open(os.path.join(HERE, "..", "vision", "Inputs",
                                        "images", "photo.png"))
        inputs = tokenizer(TEXTS[:3], padding=True, return_tensors="pt")
        out = model(input_ids=inputs.input_ids,
                    attention_mask=inputs.attention_mask,
                    pixel_values=processor(photo,
                                           return_tensors="pt").pixel_values)
        logits = out.logits_per_image[0]
        with open(os.path.join(OUT, NAME + ".similarity.txt"), "w") as f:
            for t, logit, p in zip(TEXTS[:3], logits, logits.softmax(-1)):
                f.write("%.4f %.4f %s\n" % (logit, p, t))
        print(logits, logits.softmax(-1))


if __name__ == "__main__":
    main()
