#!/usr/bin/env python3
"""Writes the tokenizer fixtures and their goldens with transformers 4.40's
slow tokenizers (../shared/reference):

- Inputs/tokenizer-texts.txt: the texts, one per line (accents, CJK, emoji,
  punctuation, digits, a very long word, an empty line, ...);
- Inputs/bert-wordpiece/: a tiny random BertModel with a WordPiece vocab.txt
  built from the texts (some words whole, some in pieces, some characters
  missing so that [UNK] occurs) and BertTokenizer's tokenizer_config.json;
  bert-wordpiece.tokenizer.json: the same vocabulary as a fast tokenizer's
  tokenizer.json (written by hand: the Rust package is absent);
- Inputs/roberta-bpe/: a tiny random RobertaModel with a byte-level BPE
  (vocab.json + merges.txt) trained here on the texts;
- <name>.ids.txt: per text two lines, the ids and the token types, as
  `--tokenize` prints them; .cased for BertTokenizer(do_lower_case=False);
  .pair for the first two texts as a pair; .truncated for a pair and a
  text past the 96 positions, cut as truncation="longest_first" does;
- bert-wordpiece.hidden.bin: the last hidden state of the first text, f32
  [tokens, hidden], for --text end to end.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/encoders/make_tokenizer_goldens.py
"""
import collections
import json
import os
import shutil
import tempfile

import regex
import torch
import transformers as tf

from make_encoder_goldens import randomize

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
TEXTS = [
    "Hello, World! The café's naïve crème brûlée.",
    "Héllo wörld: ÀÉÎÕÜ résumé façade",
    "中文字符和日本語のテキスト",
    "Emoji 😀 and 🚀 rockets!!! ❤️",
    "Numbers 123,456.78 and 1st 2nd 3rd; 42% of $100",
    "",
    "supercalifragilisticexpialidociousandthensomemorelettersuntilthewordislongerthanonehundredcharactersintotalwhichitnowsurelyis",
    "tabs\tand  double  spaces",
    "Quotes \"double\" and 'single' (parens) [brackets] {braces} <angles>",
    "Mixed: don't, can't, we'll, they're, I'm",
    "İstanbul ΑΘΗΝΑ Ελληνικά Москва",
    "dashes — and – and ¿qué? ¡sí!",
    "the [MASK] token stays [MASK]",
    "unknown ☃ snowman and ♞ knight",
]
SIZES = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, max_position_embeddings=96,
             type_vocab_size=2)


def wordpiece_vocab():
    """Specials, every character the texts use (whole and as ##x) except a
    few left out for [UNK], and some words and pieces whole."""
    basic = tf.models.bert.tokenization_bert.BasicTokenizer(do_lower_case=False)
    cased = [w for t in TEXTS for w in basic.tokenize(t)]
    words = cased + [w.lower() for w in cased]
    lowered = tf.models.bert.tokenization_bert.BasicTokenizer(do_lower_case=True)
    words += [w for t in TEXTS for w in lowered.tokenize(t)]
    missing = {"☃", "♞", "😀"}
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = sorted({c for w in words for c in w} - missing)
    pieces += chars + ["##" + c for c in chars]
    whole = sorted({w for w in words if len(w) > 3})[::2]
    pieces += whole + ["##" + w[2:] for w in whole if len(w) > 5]
    pieces += ["##ing", "##s", "un", "##known", "the", "and"]
    seen, vocab = set(), []
    for p in pieces:
        if p not in seen:
            seen.add(p)
            vocab.append(p)
    return vocab


def write_ids(path, pairs):
    with open(path, "w") as f:
        for ids, types in pairs:
            f.write(" ".join(map(str, ids)) + "\n")
            f.write(" ".join(map(str, types)) + "\n")


def encode_all(tokenizer, texts):
    out = []
    for t in texts:
        e = tokenizer(t, return_token_type_ids=True)
        out.append((e["input_ids"], e["token_type_ids"]))
    return out


def bert():
    vocab = wordpiece_vocab()
    folder = os.path.join(OUT, "bert-wordpiece")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vocab.txt")
        with open(path, "w") as f:
            f.write("\n".join(vocab) + "\n")
        tokenizer = tf.BertTokenizer(path)
        cased = tf.BertTokenizer(path, do_lower_case=False)
    tokenizer.save_pretrained(folder)
    os.remove(os.path.join(folder, "special_tokens_map.json"))
    torch.manual_seed(0)
    model = tf.BertModel(tf.BertConfig(vocab_size=len(vocab), **SIZES),
                         add_pooling_layer=False).eval()
    randomize(model, 11)
    model.save_pretrained(folder, safe_serialization=True)
    write_ids(os.path.join(OUT, "bert-wordpiece.ids.txt"),
              encode_all(tokenizer, TEXTS))
    write_ids(os.path.join(OUT, "bert-wordpiece.cased.ids.txt"),
              encode_all(cased, TEXTS))
    e = tokenizer(TEXTS[0], TEXTS[1], return_token_type_ids=True)
    write_ids(os.path.join(OUT, "bert-wordpiece.pair.ids.txt"),
              [(e["input_ids"], e["token_type_ids"])])
    # Past the 96 positions: truncated, the pair longest first.
    long_first, long_second = " ".join([TEXTS[0]] * 3), " ".join([TEXTS[1]] * 3)
    e = tokenizer(long_first, long_second, return_token_type_ids=True,
                  truncation="longest_first", max_length=96)
    single = tokenizer(" ".join([TEXTS[0]] * 5), return_token_type_ids=True,
                       truncation=True, max_length=96)
    write_ids(os.path.join(OUT, "bert-wordpiece.truncated.ids.txt"),
              [(e["input_ids"], e["token_type_ids"]),
               (single["input_ids"], single["token_type_ids"])])
    with torch.no_grad():
        e = tokenizer(TEXTS[0], return_tensors="pt")
        hidden = model(**e).last_hidden_state[0]
    hidden.numpy().astype("<f4").tofile(
        os.path.join(OUT, "bert-wordpiece.hidden.bin"))
    # The same vocabulary as a fast tokenizer's tokenizer.json.
    fast = {
        "version": "1.0",
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None,
                       "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "added_tokens": [{"id": i, "content": p, "special": True,
                          "lstrip": False, "rstrip": False,
                          "normalized": False, "single_word": False}
                         for i, p in enumerate(vocab[:5])],
        "model": {"type": "WordPiece", "unk_token": "[UNK]",
                  "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100,
                  "vocab": {p: i for i, p in enumerate(vocab)}},
    }
    with open(os.path.join(OUT, "bert-wordpiece.tokenizer.json"), "w") as f:
        json.dump(fast, f, ensure_ascii=False)
    print(f"bert-wordpiece: {len(vocab)} pieces, hidden {tuple(hidden.shape)}")


def train_byte_level_bpe(texts, merges_wanted):
    """A byte-level BPE over GPT-2's pre-tokens of the texts."""
    b2u = tf.models.gpt2.tokenization_gpt2.bytes_to_unicode()
    pattern = regex.compile(
        r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    words = collections.Counter()
    for t in texts:
        for w in pattern.findall(t):
            words[tuple(b2u[b] for b in w.encode())] += 1
    symbols = sorted(set(b2u.values()))
    merges = []
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        symbols.append(best[0] + best[1])
        merged = collections.Counter()
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return symbols, merges


def roberta():
    symbols, merges = train_byte_level_bpe(TEXTS, 150)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for s in symbols:
        vocab.setdefault(s, len(vocab))
    vocab["<mask>"] = len(vocab)
    folder = os.path.join(OUT, "roberta-bpe")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with tempfile.TemporaryDirectory() as tmp:
        v, m = os.path.join(tmp, "vocab.json"), os.path.join(tmp, "merges.txt")
        with open(v, "w") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with open(m, "w") as f:
            f.write("#version: 0.2\n")
            f.write("".join(f"{a} {b}\n" for a, b in merges))
        tokenizer = tf.RobertaTokenizer(v, m)
    tokenizer.save_pretrained(folder)
    os.remove(os.path.join(folder, "special_tokens_map.json"))
    config = tf.RobertaConfig(vocab_size=len(vocab), pad_token_id=1,
                              **dict(SIZES, max_position_embeddings=98,
                                     type_vocab_size=1))
    model = tf.RobertaModel(config, add_pooling_layer=False).eval()
    randomize(model, 12)
    model.save_pretrained(folder, safe_serialization=True)
    texts = TEXTS + ["a <mask> in the middle", "Hello <mask>"]
    write_ids(os.path.join(OUT, "roberta-bpe.ids.txt"),
              encode_all(tokenizer, texts))
    with open(os.path.join(OUT, "roberta-bpe.texts.txt"), "w") as f:
        f.write("\n".join(texts) + "\n")
    e = tokenizer(TEXTS[0], TEXTS[3], return_token_type_ids=True)
    write_ids(os.path.join(OUT, "roberta-bpe.pair.ids.txt"),
              [(e["input_ids"], e["token_type_ids"])])
    print(f"roberta-bpe: {len(vocab)} tokens, {len(merges)} merges")


def main():
    with open(os.path.join(OUT, "tokenizer-texts.txt"), "w") as f:
        f.write("\n".join(TEXTS) + "\n")
    bert()
    roberta()


if __name__ == "__main__":
    main()
