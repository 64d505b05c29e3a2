#!/usr/bin/env python3
"""Writes the SentencePiece Unigram fixtures and their goldens: XLM-R's
tokenizer (fairseq ids over sentencepiece.bpe.model) as transformers 4.40's
slow XLMRobertaTokenizer encodes with python3-sentencepiece 0.1.97.

- Inputs/xlm-roberta-spm/: a tiny random XLMRobertaModel with a Unigram
  model trained here (nmt_nfkc normalization, a user-defined symbol "@@",
  some characters left out so that <unk> occurs);
- Inputs/xlm-roberta-spm-bytes.model: a Unigram model of the same size with
  byte fallback, no normalization rules, no dummy prefix and whitespace kept
  (the test swaps it into a copy of the directory);
- Inputs/unigram-texts.txt: the encoder texts plus normalization cases
  (ligatures, full-width and circled characters, no-break spaces, combining
  accents, runs of spaces, a literal U+2581, the user-defined symbol,
  <mask> after Unicode spaces, which its lstrip drops);
- <name>.ids.txt: per text the ids and token types as --tokenize prints
  them; xlm-roberta-spm.pair.ids.txt: the first two texts as a pair;
- xlm-roberta-spm.hidden.bin: the last hidden state of the first text.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/encoders/make_unigram_goldens.py
"""
import os
import shutil
import tempfile

import sentencepiece as spm
import torch
import transformers as tf

from make_encoder_goldens import randomize
from make_tokenizer_goldens import OUT, SIZES, TEXTS, encode_all, write_ids

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "..", "..", "shared", "data", "tinystories-eval.txt")
EXTRA_TEXTS = [
    "ﬁne ﬂour ＡＢＣ１２３ ① ② ㍻ … ™ ½",
    "no\u00a0break\u2003em space and e\u0301 combining",
    "   leading, trailing and    inner   spaces   ",
    "a literal \u2581 space symbol\u2581here",
    "mail me @@ home or @@@ twice",
    "snowmen ☃☃♞ run together",
    "the <mask> token and <mask>",
    "wide\u3000<mask> and em\u2003<mask>\u00a0no-break",
    "\t tabs \t and\nnewlines \n",
]
LEFT_OUT = "☃♞😀❤🚀"
SPM_PIECES = 500


def training_text(path):
    """The texts and a slice of TinyStories, without the characters left
    out for <unk>."""
    with open(DATA) as f:
        stories = [line.strip() for line in f][:3000]
    lines = TEXTS + EXTRA_TEXTS + [s for s in stories if s]
    with open(path, "w") as f:
        for line in lines:
            f.write("".join(c for c in line if c not in LEFT_OUT) + "\n")


def train(prefix, corpus, **options):
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, model_type="unigram",
        vocab_size=SPM_PIECES, character_coverage=1.0, hard_vocab_limit=True,
        num_threads=1, seed_sentencepiece_size=20000, **options)
    return prefix + ".model"


def main():
    texts = TEXTS + EXTRA_TEXTS
    with open(os.path.join(OUT, "unigram-texts.txt"), "w") as f:
        f.write("\n".join(t.replace("\n", " ") for t in texts) + "\n")
    texts = [t.replace("\n", " ") for t in texts]
    folder = os.path.join(OUT, "xlm-roberta-spm")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        training_text(corpus)
        normalized = train(os.path.join(tmp, "nfkc"), corpus,
                           user_defined_symbols=["@@"])
        raw = train(os.path.join(tmp, "bytes"), corpus, byte_fallback=True,
                    normalization_rule_name="identity",
                    add_dummy_prefix=False, remove_extra_whitespaces=False)
        tokenizer = tf.XLMRobertaTokenizer(normalized)
        bytes_tokenizer = tf.XLMRobertaTokenizer(raw)
        shutil.copy(raw, os.path.join(OUT, "xlm-roberta-spm-bytes.model"))
    tokenizer.save_pretrained(folder)
    os.remove(os.path.join(folder, "special_tokens_map.json"))
    vocab = len(tokenizer)
    config = tf.XLMRobertaConfig(vocab_size=vocab, pad_token_id=1,
                                 **dict(SIZES, max_position_embeddings=162,
                                        type_vocab_size=1))
    torch.manual_seed(0)
    model = tf.XLMRobertaModel(config, add_pooling_layer=False).eval()
    randomize(model, 13)
    model.save_pretrained(folder, safe_serialization=True)
    write_ids(os.path.join(OUT, "xlm-roberta-spm.ids.txt"),
              encode_all(tokenizer, texts))
    write_ids(os.path.join(OUT, "xlm-roberta-spm-bytes.ids.txt"),
              encode_all(bytes_tokenizer, texts))
    e = tokenizer(texts[0], texts[1], return_token_type_ids=True)
    write_ids(os.path.join(OUT, "xlm-roberta-spm.pair.ids.txt"),
              [(e["input_ids"], e["token_type_ids"])])
    with torch.no_grad():
        e = tokenizer(texts[0], return_tensors="pt")
        hidden = model(**e).last_hidden_state[0]
    hidden.numpy().astype("<f4").tofile(
        os.path.join(OUT, "xlm-roberta-spm.hidden.bin"))
    assert len(bytes_tokenizer) == vocab
    print(f"xlm-roberta-spm: {vocab} tokens; hidden {tuple(hidden.shape)}")
    for t in texts[-len(EXTRA_TEXTS):]:
        print(tokenizer.tokenize(t))


if __name__ == "__main__":
    main()
