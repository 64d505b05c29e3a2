#!/usr/bin/env python3
"""Runs llama.cpp's own convert_hf_to_gguf.py (from llama.cpp's source
tree, the working directory) on Debian's torch 1.13: the float8 and wide
unsigned dtypes it names in its tables, which these checkpoints never use,
stand in as other dtypes, and the vocabulary is a placeholder of the
table's size (the Rust tokenizers library is not here, and the fixtures of
SentencePiece models have no tokenizer.model; the weights are what
check_llama_cpp_converter.sh compares). Every model class's own
set_vocab (Gemma's, Phi-3's: SentencePiece) gives way to it too, unless
--keep-vocab (taken off the arguments) keeps the model's own, for a folder
with its tokenizer. Arguments: the converter's.
"""
import runpy
import sys

import torch

for name, stand_in in (("float8_e4m3fn", torch.int16),
                       ("float8_e5m2", torch.int32), ("uint16", torch.int64),
                       ("uint32", torch.complex64),
                       ("uint64", torch.complex128)):
    if not hasattr(torch, name):
        setattr(torch, name, stand_in)
keep_vocab = "--keep-vocab" in sys.argv
sys.argv = ["convert_hf_to_gguf.py"] + [a for a in sys.argv[1:]
                                        if a != "--keep-vocab"]
sys.path.insert(0, ".")

import conversion  # noqa: E402  (llama.cpp's)
import conversion.base as base  # noqa: E402
import gguf  # noqa: E402  (llama.cpp's gguf-py)


def placeholder_vocab(self):
    vocab = self.hparams["vocab_size"]
    self.gguf_writer.add_tokenizer_model("llama")
    self.gguf_writer.add_token_list([f"<t{i}>" for i in range(vocab)])
    self.gguf_writer.add_token_scores([0.0] * vocab)
    self.gguf_writer.add_token_types([gguf.TokenType.NORMAL] * vocab)


def placeholder_pieces(self):
    """What _create_vocab_sentencepiece reads from tokenizer.model: Gemma
    3's converter counts the pieces to cut the embedding's padding rows."""
    vocab = self.hparams["vocab_size"]
    return ([f"<t{i}>".encode() for i in range(vocab)], [0.0] * vocab,
            [gguf.TokenType.NORMAL] * vocab)


if not keep_vocab:
    base.TextModel.set_vocab = placeholder_vocab
    base.TextModel._create_vocab_sentencepiece = placeholder_pieces
find_class = conversion.get_model_class


def placeholder_vocab_class(name, mmproj=False):
    found = find_class(name, mmproj=mmproj)
    if mmproj or not issubclass(found, base.TextModel):
        return found
    found.set_vocab = placeholder_vocab  # one conversion a process
    return found


if not keep_vocab:
    conversion.get_model_class = placeholder_vocab_class
runpy.run_path("convert_hf_to_gguf.py", run_name="__main__")
