"""llama.cpp's tokenizer test files, which the fixture scripts of
gemma4-tokenizer.test and qwen35-tokenizer.test read: a vocabulary-only
GGUF (models/ggml-vocab-NAME.gguf, read with the source's gguf-py) and its
vectors (.inp: texts split by "\\n__ggml_vocab_test__\\n"; .out: a line of
ids per text, as Hugging Face's tokenizer gives them)."""
import os
import sys


def vocab_fields(llama_cpp, name):
    """The GGUF file's fields, and readers of a string array, a number
    array and one number of them."""
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    from gguf import GGUFReader
    fields = GGUFReader(os.path.join(
        llama_cpp, "models", "ggml-vocab-%s.gguf" % name)).fields

    def strings(key):
        f = fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def numbers(key):
        f = fields[key]
        return [f.parts[i][0].item() for i in f.data]

    def number(key):
        return fields[key].parts[fields[key].data[0]][0].item()

    return fields, strings, numbers, number


def read_vectors(llama_cpp, name):
    base = os.path.join(llama_cpp, "models", "ggml-vocab-%s.gguf" % name)
    with open(base + ".inp", encoding="utf-8", newline="") as f:
        texts = f.read().split("\n__ggml_vocab_test__\n")
    with open(base + ".out", encoding="utf-8") as f:
        lines = f.read().split("\n")
    return texts, [[int(x) for x in line.split()]
                   for line in lines[:len(texts)]]


def write_vectors(out, texts, expected, ids_of):
    """The vectors as a test reads them: out/texts/NN.txt, one per
    non-empty text (the executable refuses an empty prompt file), and
    out/ids.txt, a line per text of ids_of(its ids)."""
    os.makedirs(os.path.join(out, "texts"), exist_ok=True)
    with open(os.path.join(out, "ids.txt"), "w") as golden:
        for number, (text, want) in enumerate(zip(texts, expected)):
            if not text:
                continue
            with open(os.path.join(out, "texts", "%02d.txt" % number), "w",
                      encoding="utf-8", newline="") as f:
                f.write(text)
            golden.write(" ".join(str(i) for i in ids_of(want)) + "\n")
