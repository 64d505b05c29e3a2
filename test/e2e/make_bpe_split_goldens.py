#!/usr/bin/env python3
"""Writes the inputs and golden ids of test/e2e/bpe-splits.test: the
byte-level BPE vocabulary of Inputs/gpt2-bpe with merges added where the
splits differ (digits, contractions in capitals, newlines after
punctuation, a letter after a tab or an apostrophe) as vocab.json +
merges.txt and as the tokenizer.json of a Llama 3 and of a Qwen2 tokenizer
(their pre-tokenizers, and Qwen2's NFC normalizer); a few texts (one not in
NFC); and each text's ids from transformers' slow tokenizers (4.40.2,
../shared/reference): GPT2Tokenizer, Qwen2Tokenizer, Qwen2Tokenizer with
Qwen3.5's pattern (combining marks in letter runs; on a vocabulary that
merges words with marks whole, qwen35-vocab/), and Qwen2Tokenizer
with Llama 3's pattern put in its place (Llama 3 has no slow tokenizer; the
rest of the algorithm is the same byte-level BPE, without the NFC step) and
with ignore_merges, as Llama 3's tokenizer.json has it (a piece that is a
token is that token: the vocabulary gets " Việt", which no merge reaches).
llama.cpp's staged pre-tokenizers (deepseek-llm, deepseek-coder, falcon,
starcoder, deepseek-v3) split with their expressions (llama.cpp's src/llama-vocab.cpp,
from the models' tokenizer.json) through the `regex` module, each splitting
the pieces of the one before, matches and the text between them both kept
(Hugging Face's "Isolated"), and then GPT2Tokenizer's byte-level BPE runs
on each piece. MPT's GGUF files add runs of spaces as user-defined tokens
stored as written: GPT2Tokenizer with MPT_ADDED added (ids 318 on) gives
their ids.

    bash ../shared/reference/setup.sh; source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/make_bpe_split_goldens.py
"""
import json
import os

import regex
from transformers import GPT2Tokenizer, Qwen2Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = os.path.join(HERE, "Inputs", "gpt2-bpe")
OUT = os.path.join(HERE, "Inputs", "bpe-splits")

QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"""
                 r"""\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
LLAMA3_PATTERN = QWEN2_PATTERN.replace(r"\p{N}|", r"\p{N}{1,3}|", 1)
# Qwen3.5's (llama.cpp's qwen35, from its tokenizer.json): combining marks
# in the letter runs and out of the other-character runs.
QWEN35_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?"""
                  r"""[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|"""
                  r"""\s*[\r\n]+|\s+(?!\S)|\s+""")
# GPT-4o's (o200k's) pattern, as gpt-oss's tokenizer.json spells it: words
# split where lowercase turns to uppercase (an upper run then a lower run,
# else an upper run), their contraction kept, other characters with a
# trailing "/".
GPT4O_PATTERN = (r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*"""
                 r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"""
                 r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"""
                 r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"""
                 r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|"""
                 r"""\s+(?!\S)|\s+""")
# Its fixture: words that change case inside (merged whole, so that a split
# at the change shows), and a text around them: camel case, capitals before
# a lowercase run, a title-case digraph, marks, contractions after capitals,
# a path.
CASE_WORDS = ["HelloWorld", " iPhone", " McDonald", "XMLHttp", " \u01c5ungla"]
GPT4O_TEXT = ("HelloWorld iPhone McDonald's XMLHttpRequest \u01c5ungla "
              "DON'T x\u0301Y a/b//c 12345 .NET\n\n  done")
# Qwen3.5's fixture: words whose letters carry combining marks (Devanagari
# vowel signs and virama, Thai vowels and tones, Arabic harakat, Hebrew
# niqqud), each merged whole from its bytes so that a split between a
# letter and its mark shows in the ids; and texts around them.
MARK_WORDS = ["\u0939\u093f\u0928\u094d\u0926\u0940",
              "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
              "\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627",
              "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd"]
QWEN35_TEXTS = [
    "\u0939\u093f\u0928\u094d\u0926\u0940 and \u0e2a\u0e27\u0e31"
    "\u0e2a\u0e14\u0e35!\n",
    "\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627, "
    "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd; x\u0301 "
    "\u0301\u0302 a!\u0300b cafe\u0301 12\n",
]

TEXTS = [
    "It's 12345 apples, ISN'T it? They'LL see.\n\n  Yes:\tword 3.14159!\r\n"
    "end  \n  x",
    "\u00bfQu\u00e9? \u65e5\u672c 2024\u5e74 caf\u00e9's 'quoted' HELLO'S  "
    "\n\n\n   spaced   out\t\ttabs",
    "cafe\u0301 and na\u00efve: decomposed then composed",
    "Emoji \U0001F600!!!\n\nnumbers 1,234,567.89 and x2y3z ...\n",
    "  leading, trailing  ",
    # Precomposed Latin letters (category Ll/Lu), Vietnamese first.
    "Cửa Việt, Hà Nội và Đà Nẵng. "
    "Zażółć gęślą jaźń; "
    "Příliš žluťoučký kůň; "
    "İstanbul'da ğüşıöç; Þórður; "
    "Știință și țară",
    # What the staged splits tell apart: CJK and Hangul runs, fullwidth
    # punctuation, digit runs, trailing spaces, Greek and Armenian letters.
    "你好世界！한국어 abc123456789 x=$5+<y>^~|`z "
    "«αβγ» Աաբգ ‘q’ (a) end   ",
    # What DeepSeek-V3's split tells apart: kana beside kanji, a mark
    # after a space and after a digit, ASCII punctuation before letters
    # (".cpp", "'S", "(a"), symbols (+, €, ©) and punctuation runs before
    # newlines, and digits in threes.
    "ひらがなとカタカナと漢字 llama.cpp's 'S (a) x+=1 €5 ©2024 1234567\n"
    "cafe\u0301 \u0301x 9\u0301y naïve -- ok!?\r\n\n  end",
]

# llama.cpp's staged pre-tokenizers, as the Python `regex` module spells
# them. DeepSeek LLM's letters are its tokenizer.json's ranges.
DEEPSEEK_LETTER_RANGES = [
    (0x41, 0x5A), (0x61, 0x7A), (0xB5, 0xB5), (0xC0, 0xD6), (0xD8, 0xF6),
    (0xF8, 0x1BA), (0x1BC, 0x1BF), (0x1C4, 0x293), (0x295, 0x2AF),
    (0x370, 0x373), (0x376, 0x377), (0x37B, 0x37D), (0x37F, 0x37F),
    (0x386, 0x386), (0x388, 0x38A), (0x38C, 0x38C), (0x38E, 0x3A1),
    (0x3A3, 0x3F5), (0x3F7, 0x481), (0x48A, 0x52F), (0x531, 0x556),
    (0x10A0, 0x10C5), (0x13A0, 0x13F5), (0x13F8, 0x13FD), (0x1C90, 0x1CBA),
    (0x1CBD, 0x1CBF), (0x1D00, 0x1D2B), (0x1D6B, 0x1D77), (0x1D79, 0x1D9A),
    (0x1E00, 0x1F15), (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D),
    (0x1F50, 0x1F57), (0x1F59, 0x1F59), (0x1F5B, 0x1F5B), (0x1F5D, 0x1F5D),
    (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4), (0x1FB6, 0x1FBC), (0x1FBE, 0x1FBE),
    (0x1FC2, 0x1FC4), (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3), (0x1FD6, 0x1FDB),
    (0x1FE0, 0x1FEC), (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC), (0x2102, 0x2102),
    (0x2107, 0x2107), (0x210A, 0x2113), (0x2115, 0x2115), (0x2119, 0x211D),
    (0x2124, 0x2124), (0x2126, 0x2126), (0x2128, 0x2128), (0x212A, 0x212D),
    (0x212F, 0x2134), (0x2139, 0x2139), (0x213C, 0x213F), (0x2145, 0x2149),
    (0x214E, 0x214E), (0x2183, 0x2184), (0x2C00, 0x2C7B), (0x2C7E, 0x2CE4),
    (0x2CEB, 0x2CEE), (0x2CF2, 0x2CF3), (0xA640, 0xA66D), (0xA680, 0xA69B),
    (0xA722, 0xA76F), (0xA771, 0xA787), (0xA78B, 0xA78E), (0xAB70, 0xABBF),
    (0xFB00, 0xFB06), (0xFB13, 0xFB17), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A),
    (0x10400, 0x1044F), (0x104B0, 0x104D3), (0x104D8, 0x104FB),
    (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2), (0x118A0, 0x118DF),
    (0x1E900, 0x1E943)]
DEEPSEEK_LETTERS = "".join(f"{regex.escape(chr(a))}-{regex.escape(chr(b))}"
                           for a, b in DEEPSEEK_LETTER_RANGES)
CJK = r"[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"""
STAGED = {
    "deepseek-llm": [r"[\r\n]", r"\s?[" + DEEPSEEK_LETTERS + r"]+",
                     r"\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
                     r"\s+$", CJK, r"\p{N}+"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2_PATTERN, r"[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2_PATTERN],
    "deepseek-v3": [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|"""
                    r"""[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|"""
                    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""],
}


# Added tokens of MPT's (GPT-NeoX-20B's) vocabulary: runs of spaces.
MPT_ADDED = ["    ", "   ", "  "]


def staged_split(text, patterns):
    pieces = [text]
    for pattern in patterns:
        expression = regex.compile(pattern)
        split = []
        for piece in pieces:
            last = 0
            for match in expression.finditer(piece):
                if match.start() > last:
                    split.append(piece[last:match.start()])
                split.append(match.group())
                last = match.end()
            if last < len(piece):
                split.append(piece[last:])
        pieces = split
    return pieces


class StagedTokenizer(GPT2Tokenizer):
    """GPT2Tokenizer's byte-level BPE over a staged split's pieces."""

    def __init__(self, *args, patterns, **kwargs):
        super().__init__(*args, **kwargs)
        self.patterns = patterns

    def _tokenize(self, text):
        tokens = []
        for piece in staged_split(text, self.patterns):
            spelled = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            tokens.extend(self.bpe(spelled).split(" "))
        return tokens


# Merges (in GPT-2's byte spelling: Ġ space, Ċ newline, č return, ĉ tab)
# that join what one split keeps apart and another does not.
EXTRA_MERGES = [("1", "2"), ("12", "3"), ("4", "5"), ("123", "45"),
                ("1", "4"), ("14", "1"), ("141", "5"), ("2", "0"),
                ("Ġ", "1"), ("'", "S"), ("'", "L"), ("'L", "L"),
                ("Ċ", "Ċ"), ("!", "č"), ("!č", "Ċ"), ("ĉ", "w"),
                ("?", "Ċ"), ("'", "q"), ("Ġ", "Ġ"), ("ĠĠ", "Ġ"),
                ("ĠĠ", "Ċ")]
# Whole words no merge reaches, as Llama 3's vocabulary has them; only a
# tokenizer that ignores merges (Llama 3's) gives their ids.
WHOLE_WORDS = [" Vi\u1ec7t"]


def write_vocabulary():
    """gpt2-bpe's vocabulary and merges, extended; returns (vocab, merges)."""
    with open(os.path.join(VOCAB, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(VOCAB, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(line.split()) for line in f
                  if line.strip() and not line.startswith("#version")]
    for left, right in EXTRA_MERGES:
        assert left in vocab and right in vocab, (left, right)
        if left + right not in vocab:
            vocab[left + right] = len(vocab)
        merges.append((left, right))
    byte_encoder = GPT2Tokenizer(os.path.join(VOCAB, "vocab.json"),
                                 os.path.join(VOCAB, "merges.txt")).byte_encoder
    for word in WHOLE_WORDS:
        spelled = "".join(byte_encoder[b] for b in word.encode("utf-8"))
        vocab.setdefault(spelled, len(vocab))
    write_slow_files(os.path.join(OUT, "vocab"), vocab, merges)
    return vocab, merges


def write_slow_files(directory, vocab, merges):
    """vocab.json + merges.txt in `directory`; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    files = [os.path.join(directory, "vocab.json"),
             os.path.join(directory, "merges.txt")]
    with open(files[0], "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(files[1], "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return files


class PatternTokenizer(Qwen2Tokenizer):
    """Qwen2Tokenizer's byte-level BPE split by PATTERN, without Qwen2's
    NFC."""
    PATTERN = QWEN2_PATTERN

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pat = regex.compile(self.PATTERN)

    def prepare_for_tokenization(self, text, **kwargs):
        return text, kwargs


class Llama3Tokenizer(PatternTokenizer):
    """Llama 3's pattern, with ignore_merges."""
    PATTERN = LLAMA3_PATTERN

    def bpe(self, token):
        # ignore_merges: a piece that is a token is that token.
        return token if token in self.encoder else super().bpe(token)


class Glm4Tokenizer(PatternTokenizer):
    """GLM-4's (llama.cpp's "glm4", "chatglm-bpe"): Llama 3's pattern with
    merges applied to every piece (no ignore_merges)."""
    PATTERN = LLAMA3_PATTERN


class Gpt4oTokenizer(PatternTokenizer):
    """GPT-4o's pattern (tiktoken's o200k, gpt-oss's tokenizer.json)."""
    PATTERN = GPT4O_PATTERN


class Qwen35Tokenizer(PatternTokenizer):
    """Qwen3.5's pattern: its tokenizer.json has no normalizer (llama.cpp's
    ggml-vocab-qwen35 vectors, from Hugging Face's tokenizer, keep a
    decomposed "e\u0301" two tokens)."""
    PATTERN = QWEN35_PATTERN


def merged_whole(vocab, merges, words):
    """The vocabulary and merges with `words` merged whole from their bytes,
    so that a split that cuts one shows in the ids."""
    vocab, merges = dict(vocab), list(merges)
    byte_encoder = GPT2Tokenizer(os.path.join(VOCAB, "vocab.json"),
                                 os.path.join(VOCAB, "merges.txt")).byte_encoder
    ranks = {pair: rank for rank, pair in enumerate(merges)}

    def segments(symbols):
        """Byte-level BPE of one piece: the lowest-ranked pair first."""
        symbols = list(symbols)
        while len(symbols) > 1:
            rank, i = min((ranks.get(pair, len(ranks)), i) for i, pair in
                          enumerate(zip(symbols, symbols[1:])))
            if rank == len(ranks):
                break
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        return symbols

    for word in words:
        # Join the word's first two segments until it is one token: each
        # merge ranks last, after the ones that made the segments.
        symbols = [byte_encoder[b] for b in word.encode("utf-8")]
        while len(parts := segments(symbols)) > 1:
            ranks[(parts[0], parts[1])] = len(ranks)
            merges.append((parts[0], parts[1]))
            vocab.setdefault(parts[0] + parts[1], len(vocab))
    return vocab, merges


def write_words_fixture(vocab, merges, name, words, pattern, texts,
                        tokenizers):
    """The vocabulary with `words` merged whole (merged_whole), as
    vocab.json + merges.txt (NAME-vocab/) and a tokenizer.json with
    `pattern` (NAME/); the texts (texts/NAME-i.txt); and each of
    `tokenizers`' ids of them ((ids file, class, options), a line per
    text). Returns the ids by tokenizer, and the vocabulary's size."""
    vocab, merges = merged_whole(vocab, merges, words)
    files = write_slow_files(os.path.join(OUT, f"{name}-vocab"), vocab, merges)
    os.makedirs(os.path.join(OUT, name), exist_ok=True)
    with open(os.path.join(OUT, name, "tokenizer.json"), "w",
              encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges, pattern, None, False),
                  f, ensure_ascii=False)
    for i, text in enumerate(texts):
        with open(os.path.join(OUT, "texts", f"{name}-{i}.txt"), "w",
                  encoding="utf-8", newline="") as f:
            f.write(text)
    results = {}
    for ids_name, cls, options in tokenizers:
        tokenizer = cls(*files, errors="replace", **options)
        results[ids_name] = [tokenizer(text, add_special_tokens=False)["input_ids"]
                             for text in texts]
        with open(os.path.join(OUT, f"{ids_name}.ids.txt"), "w") as f:
            for ids in results[ids_name]:
                f.write(" ".join(map(str, ids)) + "\n")
        print("wrote", ids_name)
    return results, len(vocab)


def write_gpt4o(vocab, merges):
    """GPT-4o's split on the vocabulary with CASE_WORDS merged whole (the
    ids of Llama 3's split, which keeps them whole, differ), as
    gpt4o-vocab/ and a tokenizer.json with its pattern (gpt4o/)."""
    results, size = write_words_fixture(
        vocab, merges, "gpt4o", CASE_WORDS, GPT4O_PATTERN, [GPT4O_TEXT],
        [("gpt4o", Gpt4oTokenizer, {}),
         ("gpt4o-as-llama3", Glm4Tokenizer, {})])
    assert results["gpt4o"] != results["gpt4o-as-llama3"]
    print("gpt4o vocabulary:", size, "tokens")


def write_qwen35(vocab, merges):
    """The vocabulary with MARK_WORDS merged whole from their bytes, as
    vocab.json + merges.txt (qwen35-vocab/) and a Qwen3.5 tokenizer.json
    (qwen35/); the texts; the ids of Qwen3.5's split and, on the same
    vocabulary, Qwen2's (which cuts each word at its marks)."""
    # DeepSeek-V3's split keeps marks in its letter runs too (on this
    # vocabulary, where the main one's merges barely tell it from Llama 3's).
    results, size = write_words_fixture(
        vocab, merges, "qwen35", MARK_WORDS, QWEN35_PATTERN, QWEN35_TEXTS,
        [("qwen35", Qwen35Tokenizer, {}),
         ("qwen35-as-qwen2", Qwen2Tokenizer, {}),
         ("deepseek-v3-marks", StagedTokenizer,
          {"patterns": STAGED["deepseek-v3"]})])
    assert results["qwen35"] != results["qwen35-as-qwen2"]
    assert results["deepseek-v3-marks"] != results["qwen35-as-qwen2"]
    print("qwen35 vocabulary:", size, "tokens")


def tokenizer_json(vocab, merges, pattern, normalizer, ignore_merges):
    return {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": normalizer,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": False, "use_regex": False}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "ignore_merges": ignore_merges, "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def main():
    os.makedirs(os.path.join(OUT, "texts"), exist_ok=True)
    for i, text in enumerate(TEXTS):
        with open(os.path.join(OUT, "texts", f"{i}.txt"), "w",
                  encoding="utf-8", newline="") as f:
            f.write(text)
    vocab, merges = write_vocabulary()
    files = [os.path.join(OUT, "vocab", "vocab.json"),
             os.path.join(OUT, "vocab", "merges.txt")]
    tokenizers = [
        ("gpt2", GPT2Tokenizer, None, None, {}),
        ("qwen2", Qwen2Tokenizer, QWEN2_PATTERN, {"type": "NFC"}, {}),
        ("llama3", Llama3Tokenizer, LLAMA3_PATTERN, None, {}),
        ("glm4", Glm4Tokenizer, None, None, {})]
    tokenizers += [(name, StagedTokenizer, None, None, {"patterns": patterns})
                   for name, patterns in STAGED.items()]
    tokenizers.append(("mpt", GPT2Tokenizer, None, None, {}))
    for name, cls, pattern, normalizer, options in tokenizers:
        if pattern:
            os.makedirs(os.path.join(OUT, name), exist_ok=True)
            with open(os.path.join(OUT, name, "tokenizer.json"), "w",
                      encoding="utf-8") as f:
                json.dump(tokenizer_json(vocab, merges, pattern, normalizer,
                                         cls is Llama3Tokenizer), f,
                          ensure_ascii=False)
        tokenizer = cls(*files, errors="replace", **options)
        if name == "mpt":
            tokenizer.add_tokens(MPT_ADDED)
            assert tokenizer.convert_tokens_to_ids(MPT_ADDED) == [
                len(vocab) + i for i in range(len(MPT_ADDED))]
        with open(os.path.join(OUT, f"{name}.ids.txt"), "w") as f:
            for text in TEXTS:
                ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                f.write(" ".join(map(str, ids)) + "\n")
        print("wrote", name)
    write_qwen35(vocab, merges)
    write_gpt4o(vocab, merges)


if __name__ == "__main__":
    main()
