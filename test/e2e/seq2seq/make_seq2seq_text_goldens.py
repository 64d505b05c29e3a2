#!/usr/bin/env python3
"""Writes the encoder-decoder text fixtures (test/e2e/seq2seq/Inputs/<name>/:
a tiny random model with its tokenizer files) and their goldens with
transformers 4.40 (../shared/reference) and python3-sentencepiece 0.1.97:

- t5-text/: a T5ForConditionalGeneration with a SentencePiece Unigram
  spiece.model trained here on ../shared/data/tinystories-eval.txt (pad 0,
  </s> 1, <unk> 2) and EXTRA_IDS sentinel tokens (T5Tokenizer);
- marian-text/: a MarianMTModel with source.spm and target.spm trained on
  the two halves of that text and vocab.json their union after </s>
  <unk>, with <pad> last (MarianTokenizer), plus a language code;
- bart-text/: a BartForConditionalGeneration with a byte-level BPE
  (BartTokenizer: <s> <pad> </s> <unk>, GPT-2's 256 byte tokens, MERGES,
  <mask>), its texts framed <s> ... </s>; generation_config.json
  suppresses the bytes outside printable ASCII so that outputs are text;
- <name>.texts.txt: TEXTS (MARIAN_TEXTS), one per line;
- <name>.source-ids.txt: per text, the ids the
  reference tokenizer gives it as a source (</s> appended);
- <name>.generated.txt: per text, the ids generate() picks greedily
  (NEW_TOKENS at most) after the decoder start token, and
  <name>.decoded.txt their text, decode(skip_special_tokens=True,
  clean_up_tokenization_spaces=False).

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    apt-get install python3-sentencepiece
    /usr/bin/python3 test/e2e/seq2seq/make_seq2seq_text_goldens.py
"""
import json
import os
import tempfile

import sentencepiece as spm
import torch
import transformers as tf

from byte_level import byte_alphabet

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
CORPUS = os.path.join(HERE, "../../../../shared/data/tinystories-eval.txt")
EXTRA_IDS = 4
NEW_TOKENS = 10
# Plain sentences, NFKC cases (full-width letters, a ligature, a no-break
# space), runs of spaces, words the corpus never saw, and T5's sentinels
# with the spaces around them.
TEXTS = [
    "Once upon a time, there was a little girl named Lily.",
    "Tom  and   Lily played in the park.",
    "The ｆｕｌｌ-width ﬁsh swam\u00a0away!",
    "Zebras quietly juggle xylophones.",
    "Lily <extra_id_0> the ball <extra_id_1>  over the fence.",
    "<extra_id_3>",
]
BART_TEXTS = [
    "Once upon a time, there was a little girl named Lily.",
    "Lily played in the park with <mask> ball.",
    "  Tom   and Lily  ",
    "Café naïve — “quoted” 日本",
]
MARIAN_TEXTS = [
    "Once upon a time, there was a little girl named Lily.",
    ">>fra<< Tom and Lily played in the park.",
    "Zebras quietly juggle   xylophones.",
    "She said, \"Thank you, Tom!\" </s> and smiled.",
]


def train(text, prefix, size, **ids):
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, vocab_size=size, model_type="unigram",
        character_coverage=1.0, num_threads=1, **ids)
    return prefix + ".model"


def randomize(model, seed):
    """Weights large enough to give varied greedy outputs; norm scales
    around 1 (as make_seq2seq_goldens.py)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name and isinstance(model, tf.MarianMTModel):
                continue
            noise = torch.randn(p.shape, generator=g)
            is_scale = "layer_norm" in name and name.endswith("weight")
            p.copy_(1 + 0.5 * noise if is_scale else 0.4 * noise)
            if name.endswith(".q.weight"):
                p.mul_(0.25)


def write_goldens(name, model, tokenizer, texts):
    folder = os.path.join(OUT, name)
    model.generation_config.forced_eos_token_id = None
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    with open(os.path.join(OUT, name + ".texts.txt"), "w") as f:
        f.write("".join(text + "\n" for text in texts))
    with open(os.path.join(OUT, name + ".source-ids.txt"), "w") as ids_file, \
         open(os.path.join(OUT, name + ".generated.txt"), "w") as generated, \
         open(os.path.join(OUT, name + ".decoded.txt"), "w") as decoded:
        for text in texts:
            source = tokenizer(text).input_ids
            ids_file.write(" ".join(map(str, source)) + "\n")
            with torch.no_grad():
                out = model.generate(torch.tensor([source]), num_beams=1,
                                     do_sample=False,
                                     max_new_tokens=NEW_TOKENS)[0].tolist()
            generated.write(" ".join(map(str, out[1:])) + "\n")
            words = tokenizer.decode(out, skip_special_tokens=True,
                                     clean_up_tokenization_spaces=False)
            decoded.write(words + "\n")
            print(f"{name}: {text!r} -> {source} -> {out} {words!r}")


def t5(work):
    model_file = train(CORPUS, os.path.join(work, "spiece"), 150, pad_id=0,
                       eos_id=1, unk_id=2, bos_id=-1)
    tokenizer = tf.T5Tokenizer(model_file, extra_ids=EXTRA_IDS, legacy=True)
    config = tf.T5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=48, num_layers=2,
        num_heads=4, relative_attention_num_buckets=8,
        relative_attention_max_distance=16, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0)
    torch.manual_seed(0)
    model = tf.T5ForConditionalGeneration(config).eval()
    randomize(model, 5)
    write_goldens("t5-text", model, tokenizer, TEXTS)


def marian(work):
    with open(CORPUS) as f:
        corpus = f.read()
    half = len(corpus) // 2
    models = []
    for side, part in [("source", corpus[:half]), ("target", corpus[half:])]:
        path = os.path.join(work, side + ".txt")
        with open(path, "w") as f:
            f.write(part)
        models.append(train(path, os.path.join(work, side), 120, unk_id=1,
                            eos_id=0, bos_id=-1, pad_id=-1))
    pieces = ["</s>", "<unk>"]
    for model_file in models:
        processor = spm.SentencePieceProcessor(model_file=model_file)
        for i in range(processor.get_piece_size()):
            piece = processor.id_to_piece(i)
            if piece not in pieces:
                pieces.append(piece)
    pieces += [">>fra<<", "<pad>"]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    folder = os.path.join(work, "marian-tokenizer")
    os.makedirs(folder)
    with open(os.path.join(folder, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    tokenizer = tf.MarianTokenizer(models[0], models[1],
                                   os.path.join(folder, "vocab.json"))
    pad = vocab["<pad>"]
    config = tf.MarianConfig(
        vocab_size=len(vocab), d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
        scale_embedding=True, pad_token_id=pad, decoder_start_token_id=pad,
        eos_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = tf.MarianMTModel(config).eval()
    randomize(model, 6)
    write_goldens("marian-text", model, tokenizer, MARIAN_TEXTS)


MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"),
          ("o", "n"), ("e", "r"), ("Ġ", "s"), ("Ġ", "L"), ("i", "l"),
          ("Ġ", "p"), ("a", "r")]


def bart(work):
    pieces = ["<s>", "<pad>", "</s>", "<unk>"] + byte_alphabet()
    pieces += [left + right for left, right in MERGES] + ["<mask>"]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    with open(os.path.join(work, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(work, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
        f.writelines(f"{l} {r}\n" for l, r in MERGES)
    tokenizer = tf.BartTokenizer(os.path.join(work, "vocab.json"),
                                 os.path.join(work, "merges.txt"))
    config = tf.BartConfig(
        vocab_size=len(tokenizer), d_model=32, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
        pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2, forced_bos_token_id=None,
        forced_eos_token_id=None)
    torch.manual_seed(0)
    model = tf.BartForConditionalGeneration(config).eval()
    randomize(model, 11)
    # Byte tokens outside printable ASCII would make partial UTF-8.
    model.generation_config.suppress_tokens = [
        4 + b for b in list(range(0, 32)) + list(range(127, 256))]
    write_goldens("bart-text", model, tokenizer, BART_TEXTS)


def main():
    with tempfile.TemporaryDirectory() as work:
        t5(work)
        marian(work)
        bart(work)


if __name__ == "__main__":
    main()
