#!/usr/bin/env python3
"""test/fuzz/make_seeds.py: writes the fuzz targets' seed corpora
(test/fuzz/corpus/<target>/) from the test suite's own inputs, with the
Python standard library (and NumPy for the LoRA seed, which the LoRA
tests' fixture script makes).

Each seed is one valid input of its target (FuzzFiles.h's part separator
between the files of a multi-file input), so that fuzzing starts from
everything the readers accept: one Hugging Face directory per family, the
GGUF formats and both embedded tokenizers, a llama2.c checkpoint, every
tokenizer file format, images, audio and command lines.

fuzz-tokenizer's seeds are tokenizer blobs as tfmc serializes them, which
only the built fuzz-tokenizer-files target can write: scripts/fuzz.sh
passes --tokenizer-files BINARY to make those too.

    /usr/bin/python3 test/fuzz/make_seeds.py [--tokenizer-files BINARY]
"""
import argparse
import glob
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import wave
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
E2E = os.path.join(ROOT, "test", "e2e")
SHARED_MODELS = os.path.join(ROOT, "..", "shared", "models")
SEPARATOR = b"\n--tfm-fuzz-next-part--\n"
# The files of a model directory FuzzModel.cpp's hf target writes.
DIRECTORY_FILES = ["generation_config.json", "preprocessor_config.json",
                   "tokenizer_config.json", "tokenizer.json", "vocab.json",
                   "merges.txt", "vocab.txt", "tokenizer.model",
                   "spiece.model", "special_tokens_map.json"]
# Texts of the tokenizer seeds.
TEXTS = [b"Once upon a time, there was a little fox.",
         b"  Hello\tWORLD!! [MASK] <mask> </s> >>fra<< caf\xc3\xa9 \xff"]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def corpus(target):
    directory = os.path.join(HERE, "corpus", target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    return directory


def write_seed(directory, name, data):
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def hf_directory_seed(model_dir):
    parts = [read(os.path.join(model_dir, "config.json")),
             read(os.path.join(model_dir, "model.safetensors"))]
    for name in DIRECTORY_FILES:
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            parts += [name.encode(), read(path)]
    return SEPARATOR.join(parts)


def hf_seeds():
    """One directory per model_type (its smallest), single-file checkpoints
    only (sharded ones are the safetensors target's)."""
    smallest = {}
    for config in sorted(glob.glob(os.path.join(E2E, "**", "config.json"),
                                   recursive=True)):
        model_dir = os.path.dirname(config)
        if not os.path.exists(os.path.join(model_dir, "model.safetensors")):
            continue
        kind = json.loads(read(config)).get("model_type", "?")
        seed = hf_directory_seed(model_dir)
        if kind not in smallest or len(seed) < len(smallest[kind][1]):
            smallest[kind] = (os.path.basename(model_dir), seed)
    directory = corpus("fuzz-hf")
    for kind, (name, seed) in sorted(smallest.items()):
        write_seed(directory, f"{kind}-{name}", seed)
    write_seed(directory, "gpt2-lora", lora_seed())


def lora_seed():
    """GPT-2's fixture with a PEFT LoRA adapter (fan_in_fan_out, as
    test/e2e/lora/make_lora_fixture.py makes it), its two files as parts
    (FuzzModel.cpp merges them)."""
    sys.path.insert(0, os.path.join(E2E, "lora"))
    import numpy
    import make_lora_fixture
    base = os.path.join(E2E, "Inputs", "gpt2-f32")
    with tempfile.TemporaryDirectory() as work:
        make_lora_fixture.gpt2(numpy.random.default_rng(7), base, work)
        adapter = os.path.join(work, "adapter")
        parts = [read(os.path.join(base, "config.json")),
                 read(os.path.join(base, "model.safetensors"))]
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            parts += [name.encode(), read(os.path.join(adapter, name))]
    return SEPARATOR.join(parts)


def lora_adapter_seeds(work):
    """stories260K's plain adapter (make_lora_fixture.py) for
    fuzz-lora-adapters: its config and safetensors, then the same adapter
    as a GGUF LoRA file (write_gguf_lora.py)."""
    sys.path.insert(0, os.path.join(E2E, "lora"))
    import numpy
    import make_lora_fixture
    base = os.path.join(SHARED_MODELS, "stories260K-hf")
    tensors = make_lora_fixture.read_safetensors(
        os.path.join(base, "model.safetensors"))
    make_lora_fixture.plain(numpy.random.default_rng(7), tensors, base,
                            os.path.join(work, "plain"))
    adapter = os.path.join(work, "plain", "adapter")
    gguf = os.path.join(work, "plain-lora.gguf")
    subprocess.run([sys.executable, os.path.join(E2E, "lora",
                                                 "write_gguf_lora.py"),
                    adapter, base, gguf], check=True)
    parts = [read(os.path.join(adapter, "adapter_config.json")),
             read(os.path.join(adapter, "adapter_model.safetensors")),
             read(gguf)]
    write_seed(corpus("fuzz-lora-adapters"), "plain", SEPARATOR.join(parts))


def safetensors_seeds():
    directory = corpus("fuzz-safetensors")
    single = os.path.join(E2E, "Inputs", "llama-gqa-f16-untied")
    write_seed(directory, "single", SEPARATOR.join(
        [b"", read(os.path.join(single, "model.safetensors"))]))
    sharded = os.path.join(E2E, "Inputs", "llama-gqa-bf16-sharded")
    write_seed(directory, "sharded", SEPARATOR.join(
        [read(os.path.join(sharded, "model.safetensors.index.json")),
         read(os.path.join(sharded, "model-00001-of-00002.safetensors")),
         read(os.path.join(sharded, "model-00002-of-00002.safetensors"))]))


def gguf_seeds(work):
    directory = corpus("fuzz-gguf")
    writer = os.path.join(E2E, "write_gguf.py")
    tok512 = os.path.join(SHARED_MODELS, "stories260K", "tok512.bin")
    runs = {
        "f32-sentencepiece": ["--random", "32,1,4,2,64,512",
                              "--sp-tokenizer", tok512],
        "q8_0": ["--random", "32,1,4,2,64,64", "--type", "Q8_0"],
        "q4_0-q4_1": ["--random", "32,1,4,2,64,64", "--type", "Q4_0",
                      "--edge-type", "Q4_1"],
        "bf16-f16": ["--random", "32,1,4,2,64,64", "--type", "BF16",
                     "--edge-type", "F16"],
        "q4_k-q6_k": ["--random", "256,1,4,1,256,16", "--type", "Q4_K",
                      "--edge-type", "Q6_K"],
        "gpt2-tokenizer": ["--random", "32,1,4,2,64,297", "--gpt2-tokenizer",
                           os.path.join(E2E, "Inputs", "gpt2-bpe")],
        # The fifth bits (Q5_K kept as q5_k, Q5_0 and Q5_1 requantized),
        # IQ4's levels, the two- and three-bit K-quants.
        "q5-iq4": ["--random", "256,1,4,1,256,16", "--type", "Q5_K",
                   "--type-for", "attn_k=Q5_0", "--type-for", "attn_v=IQ4_XS",
                   "--type-for", "ffn_up=Q5_1", "--type-for", "ffn_down=Q3_K",
                   "--type-for", "ffn_gate=Q2_K", "--edge-type", "IQ4_NL"],
        # Qwen2's biases and byte-level BPE split.
        "qwen2": ["--hf", os.path.join(E2E, "families", "Inputs", "qwen2"),
                  "--arch", "qwen2"],
        "llama3-split": ["--random", "32,1,4,2,64,320", "--gpt2-tokenizer",
                         os.path.join(E2E, "Inputs", "bpe-splits", "vocab"),
                         "--set", 'tokenizer.ggml.pre="llama-bpe"'],
    }
    for name, arguments in runs.items():
        out = os.path.join(work, name + ".gguf")
        subprocess.run([sys.executable, writer, out] + arguments, check=True)
        write_seed(directory, name, read(out))
    # LLaVA's and LLaVA-NeXT's pairs: the text model, then its mmproj file
    # (F16 matrices, as llama.cpp's legacy converter writes them; NeXT's
    # with its pinpoints and newline).
    pair = os.path.join(E2E, "vlm", "write_llava_gguf.py")
    for folder, seed in (("llava", "llava-mmproj"),
                         ("llava-next", "llava-next-mmproj")):
        llava = os.path.join(E2E, "vlm", "Inputs", folder)
        text, mmproj = (os.path.join(work, folder + n)
                        for n in (".gguf", "-mmproj.gguf"))
        subprocess.run([sys.executable, pair, "text", text, llava, tok512,
                        "--type", "F16"], check=True)
        subprocess.run([sys.executable, pair, "mmproj", mmproj, llava],
                       check=True)
        write_seed(directory, seed, read(text) + SEPARATOR + read(mmproj))


def llama2c_seed():
    """A llama2.c checkpoint (version 0: seven int32 sizes, then f32
    weights in its order) with dim 8, one layer, vocab 16; a negative vocab
    size means an unshared classifier."""
    directory = corpus("fuzz-llama2c")
    rng = random.Random(1)
    for name, vocab in (("shared-classifier", 16), ("own-classifier", -16)):
        dim, hidden, layers, heads, kv_heads, seq = 8, 16, 1, 2, 1, 16
        head = dim // heads
        counts = [abs(vocab) * dim,            # token embeddings
                  layers * dim,                # attention norm
                  layers * dim * dim,          # wq
                  layers * dim * kv_heads * head,  # wk
                  layers * dim * kv_heads * head,  # wv
                  layers * dim * dim,          # wo
                  layers * dim,                # ffn norm
                  layers * hidden * dim,       # w1
                  layers * dim * hidden,       # w2
                  layers * hidden * dim,       # w3
                  dim,                         # final norm
                  seq * head // 2 * 2]         # the unused RoPE tables
        if vocab < 0:
            counts.append(abs(vocab) * dim)
        values = [rng.uniform(-0.5, 0.5) for _ in range(sum(counts))]
        write_seed(directory, name,
                   struct.pack("<7i", dim, hidden, layers, heads, kv_heads,
                               vocab, seq) +
                   struct.pack(f"<{len(values)}f", *values))


def tokenizer_file_seeds(work):
    """(vocabulary size, path read, files) for every tokenizer format."""
    directory = corpus("fuzz-tokenizer-files")
    seeds = {}
    stories = os.path.join(SHARED_MODELS, "stories260K")
    stories_hf = os.path.join(SHARED_MODELS, "stories260K-hf")
    seeds["llama2c-bin"] = (512, "tokenizer.bin", {
        "tokenizer.bin": os.path.join(stories, "tok512.bin")})
    seeds["sentencepiece-bpe"] = (512, "tokenizer.model", {
        "tokenizer.model": os.path.join(stories_hf, "tokenizer.model")})
    gpt2 = os.path.join(E2E, "Inputs", "gpt2-bpe")
    seeds["gpt2-vocab-merges"] = (297, ".", {
        "vocab.json": os.path.join(gpt2, "vocab.json"),
        "merges.txt": os.path.join(gpt2, "merges.txt")})
    splits = os.path.join(E2E, "Inputs", "bpe-splits")
    for split in ("llama3", "qwen2"):
        seeds[f"{split}-tokenizer-json"] = (320, ".", {
            "tokenizer.json": os.path.join(splits, split, "tokenizer.json")})
    encoders = os.path.join(E2E, "encoders", "Inputs")
    wordpiece = os.path.join(encoders, "bert-wordpiece")
    seeds["wordpiece-vocab-txt"] = (
        json.loads(read(os.path.join(wordpiece, "config.json")))["vocab_size"],
        ".", {"vocab.txt": os.path.join(wordpiece, "vocab.txt"),
              "tokenizer_config.json":
                  os.path.join(wordpiece, "tokenizer_config.json")})
    seeds["wordpiece-tokenizer-json"] = (
        json.loads(read(os.path.join(wordpiece, "config.json")))["vocab_size"],
        ".", {"tokenizer.json":
              os.path.join(encoders, "bert-wordpiece.tokenizer.json")})
    for name, model_dir in (("roberta-bpe", "encoders/Inputs/roberta-bpe"),
                            ("xlm-roberta-unigram",
                             "encoders/Inputs/xlm-roberta-spm"),
                            ("t5-unigram", "seq2seq/Inputs/t5-text"),
                            ("marian", "seq2seq/Inputs/marian-text"),
                            ("bart-bpe", "seq2seq/Inputs/bart-text")):
        path = os.path.join(E2E, model_dir)
        files = {f: os.path.join(path, f) for f in os.listdir(path)
                 if f not in ("config.json", "model.safetensors",
                              "generation_config.json", "added_tokens.json")}
        vocab = json.loads(read(os.path.join(path, "config.json")))["vocab_size"]
        seeds[name] = (vocab, ".", files)
    # A small Unigram model (byte fallback, no character map), whose blob
    # is small enough for fuzz-tokenizer.
    xlmr = os.path.join(encoders, "xlm-roberta-spm")
    seeds["unigram-byte-fallback"] = (
        json.loads(read(os.path.join(xlmr, "config.json")))["vocab_size"],
        ".", {"sentencepiece.bpe.model":
              os.path.join(encoders, "xlm-roberta-spm-bytes.model"),
              "tokenizer_config.json":
                  os.path.join(xlmr, "tokenizer_config.json")})
    # Last, so that the seeds before keep their texts: StarCoder's Digits
    # split, an NFC normalizer, ignore_merges and an added token that is
    # text (runs of spaces), in one tokenizer.json.
    starcoder = json.loads(read(os.path.join(splits, "llama3", "tokenizer.json")))
    starcoder["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]}
    starcoder["normalizer"] = {"type": "NFC"}
    starcoder["added_tokens"] = [{"id": 318, "content": "  ", "special": False},
                                 {"id": 319, "content": "<|end|>", "special": True}]
    path = os.path.join(work, "starcoder-tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(starcoder, f, ensure_ascii=False)
    seeds["starcoder-tokenizer-json"] = (320, ".", {"tokenizer.json": path})
    # GGUF tokenizers: llama.cpp's staged DeepSeek split, BERT's WordPiece.
    writer = os.path.join(E2E, "write_gguf.py")
    for name, arguments in (
            ("deepseek-llm-gguf", ["--random", "32,1,4,2,64,320",
                                   "--gpt2-tokenizer", os.path.join(splits, "vocab"),
                                   "--added-token", "\\s\\s",
                                   "--set", 'tokenizer.ggml.pre="deepseek-llm"']),
            ("bert-gguf", ["--random", "32,1,4,2,64,296", "--bert-tokenizer",
                           os.path.join(E2E, "encoders", "Inputs",
                                        "bert-wordpiece")])):
        path = os.path.join(work, name + ".gguf")
        subprocess.run([sys.executable, writer, path] + arguments, check=True)
        vocab = 320 if name.startswith("deepseek") else 296
        seeds[name] = (vocab, "tokenizer.gguf", {"tokenizer.gguf": path})
    for i, (name, (vocab, path, files)) in enumerate(seeds.items()):
        parts = [str(vocab).encode(), path.encode(), TEXTS[i % len(TEXTS)]]
        for file_name, source in sorted(files.items()):
            parts += [file_name.encode(), read(source)]
        write_seed(directory, name, SEPARATOR.join(parts))
    return directory


def tokenizer_seeds(tokenizer_files, seeds_dir, work):
    """Blobs as tfmc serializes them (fuzz-tokenizer-files writes each),
    each with a text."""
    directory = corpus("fuzz-tokenizer")
    for i, seed in enumerate(sorted(os.listdir(seeds_dir))):
        blob = os.path.join(work, seed + ".blob")
        subprocess.run([tokenizer_files, os.path.join(seeds_dir, seed)],
                       env=dict(os.environ, TFM_FUZZ_SAVE_BLOB=blob),
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        # Blobs with a real character map (nmt_nfkc's: 235 KB) slow
        # fuzz-tokenizer twentyfold (350 executions a second): they are
        # fuzz-tokenizer-files' inputs, run there on their texts.
        if os.path.getsize(blob) <= 64 * 1024:
            write_seed(directory, seed,
                       read(blob) + SEPARATOR + TEXTS[i % len(TEXTS)])


def png(width, height, color_type, rows):
    """A PNG of 8-bit samples (color type 0 gray, 2 RGB, 6 RGBA)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data)))
    raw = b"".join(b"\0" + bytes(row) for row in rows)
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8,
                                       color_type, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def image_seeds():
    """PNGs drawn here and the JPEG/PNG files of the vision tests; the
    first byte picks the resampling (FuzzImage.cpp)."""
    directory = corpus("fuzz-image")
    channels = {0: 1, 2: 3, 6: 4}
    for filter_byte, (color_type, width, height) in enumerate(
            [(2, 40, 30), (0, 17, 33), (6, 31, 31)]):
        rows = [[(x * 7 + y * 3 + c * 50) % 256 for x in range(width)
                 for c in range(channels[color_type])] for y in range(height)]
        write_seed(directory, f"png-type{color_type}",
                   bytes([filter_byte * 3]) + png(width, height, color_type,
                                                  rows))
    for i, path in enumerate(sorted(
            glob.glob(os.path.join(E2E, "vision", "Inputs", "images", "*.jpg")) +
            glob.glob(os.path.join(E2E, "vision", "Inputs", "images", "*.png")))):
        if os.path.getsize(path) <= 64 * 1024:
            write_seed(directory, os.path.basename(path),
                       bytes([i % 12]) + read(path))


def audio_seeds(work):
    """WAV files (16-bit mono at the model's rate, stereo at another rate
    that the loader resamples)."""
    directory = corpus("fuzz-audio")
    for name, channels, rate, frames in (("mono-16k", 1, 16000, 800),
                                         ("stereo-22k", 2, 22050, 1500)):
        path = os.path.join(work, name + ".wav")
        with wave.open(path, "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(2)
            w.setframerate(rate)
            rng = random.Random(channels)
            w.writeframes(struct.pack(
                f"<{frames * channels}h",
                *[rng.randint(-8000, 8000) for _ in range(frames * channels)]))
        write_seed(directory, name, read(path))


def argument_seeds():
    directory = corpus("fuzz-arguments")
    command_lines = {
        "generate": ["--prompt", "Once upon a time", "-n", "20",
                     "--temperature", "0.8", "--top-k", "40", "--top-p",
                     "0.9", "--seed", "7", "--stop", ".", "--stats"],
        "tokens": ["--tokens", "1 2, 3\t4", "--force-tokens", "5 6",
                   "--print-ids", "--logits", "out.bin"],
        "call": ["--call", "encode", "--text", "a", "--text-pair", "b",
                 "--token-types", "0 1", "--format", "json", "--batch", "8"],
        "seq2seq": ["--text", "hi", "--beams", "4", "--no-repeat-ngram", "3",
                    "--min-new-tokens", "2", "--suppress", "1 2",
                    "--forced-eos", "--decoder-tokens", "0 5"],
        "files": ["image.png", "audio.wav", "--preprocess", "--output",
                  "f.bin", "--truncate", "--repetition-penalty", "1.1"],
    }
    for name, arguments in command_lines.items():
        write_seed(directory, name, b"\0".join(a.encode() for a in arguments))


def http_body_seeds():
    """/v1/completions bodies, alone (prompts as ids) and with a tokenizer
    blob (fuzz-tokenizer's seeds carry them) for text prompts."""
    directory = corpus("fuzz-http-body")
    bodies = {
        "text": {"model": "fuzz", "prompt": "Once upon a time",
                 "max_tokens": 16, "temperature": 0.8, "top_p": 0.9,
                 "top_k": 40, "seed": 3, "stop": [".", " the"],
                 "stream": True, "ignore_eos": False},
        "ids": {"prompt": [1, 5, 9, 300], "max_tokens": 4, "n": 1,
                "repetition_penalty": 1.1, "stop": "x", "user": "u"},
        "batch": {"prompt": ["one prompt"], "max_tokens": 2},
        "chat": {"messages": [{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": [
                                  {"type": "text", "text": "Hi"}]}],
                 "max_completion_tokens": 8, "add_generation_prompt": True,
                 "stream": True, "stream_options": {"include_usage": True}},
        "chat-image": {"messages": [{"role": "user", "content": [
            {"type": "image_url",
             "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "text", "text": "What is it?"}]}],
            "max_tokens": 4},
    }
    blob_seed = os.path.join(HERE, "corpus", "fuzz-tokenizer", "llama2c-bin")
    blob = read(blob_seed).split(SEPARATOR)[0] if os.path.exists(blob_seed) else b""
    for name, body in bodies.items():
        data = json.dumps(body).encode()
        write_seed(directory, name, data)
        if blob:
            write_seed(directory, name + "-tokenizer", data + SEPARATOR + blob)


def serve_request_seeds():
    """Bodies of tfm-serve's encoder endpoints and of
    /v1/images/generations, and multipart uploads as
    /v1/audio/transcriptions takes them, each with its Content-Type."""
    directory = corpus("fuzz-serve-requests")
    bodies = {
        "embeddings": {"model": "fuzz", "input": [[1, 5, 9], [7]],
                       "encoding_format": "base64", "user": "u"},
        "embedding-ids": {"input": [3, 4, 5], "dimensions": 8},
        "classify": {"input": [[10, 11], [12]]},
        "rerank": {"query": "q", "documents": ["a", {"text": "b"}],
                   "top_n": 1, "return_documents": True},
        "images": {"model": "fuzz", "prompt": "a cat", "n": 2,
                   "size": "96x64", "response_format": "b64_json",
                   "negative_prompt": "", "steps": 4, "guidance_scale": 7.5,
                   "seed": 3, "scheduler": "euler_a", "user": "u"},
    }
    for name, body in bodies.items():
        write_seed(directory, name, json.dumps(body).encode() + SEPARATOR)
    boundary = b"tfmBoundary7"
    form = b"".join(
        b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"" +
        name + b"\"" + extra + b"\r\n\r\n" + value + b"\r\n"
        for name, extra, value in [
            (b"file", b"; filename=\"a.wav\"", b"RIFF....WAVEfmt "),
            (b"model", b"", b"fuzz"), (b"response_format", b"", b"json"),
            (b"language", b"", b"en"), (b"temperature", b"", b"0")])
    form += b"--" + boundary + b"--\r\n"
    write_seed(directory, "upload", form + SEPARATOR +
               b"multipart/form-data; boundary=" + boundary)
    write_seed(directory, "upload-quoted", form + SEPARATOR +
               b'multipart/form-data; charset=utf-8; boundary="' + boundary +
               b'"')


# Macros (defaults, keywords, recursion) and tojson's keywords, as the
# tool-calling templates use them.
MACRO_TEMPLATE = """{%- macro show(v, depth=0, prefix='') -%}
{%- if v is mapping -%}
{{ prefix }}{ {%- for k, x in v | items %}{{ k }}: {{ show(x, depth + 1) }}{% if not loop.last %}, {% endif %}{% endfor -%} }
{%- elif v is iterable and v is not string -%}
[{{ v | map('string') | join(', ') }}]
{%- else -%}
{{ prefix ~ v | tojson }}
{%- endif -%}
{%- endmacro -%}
{%- macro turn(role, content='') -%}
<|{{ role }}|>{{ content | trim }}
{%- endmacro -%}
{%- set tools = [{'name': 'f', 'parameters': {'type': 'object', 'properties': {'a': {'type': 'integer', 'enum': [1, 2.5]}}}}] -%}
{%- for m in messages | selectattr('role', 'ne', 'system') -%}
{{ turn(m.role, content=m.content if m.content else m.tool_calls | tojson(indent=1, sort_keys=true)) }}
{% endfor -%}
{{ show(tools[0], prefix='> ') }}
{{ tools | tojson(separators=[',', ':'], ensure_ascii=true) }}
{%- if add_generation_prompt %}{{ turn('assistant') }}{% endif -%}
"""


def chat_template_seeds():
    """The templates of test/serve's goldens, with a conversation each; its
    tool-calling templates, with its tools set by the template itself (the
    target gives a template messages only) and a conversation that calls
    them; its vision-language templates, over content parts with images;
    and one of macros."""
    directory = corpus("fuzz-chat-template")
    inputs = os.path.join(HERE, "..", "serve", "Inputs")
    with open(os.path.join(inputs, "chat-templates.json")) as f:
        goldens = json.load(f)
    conversations = list(goldens["conversations"].values())
    for i, (name, template) in enumerate(sorted(goldens["templates"].items())):
        messages = json.dumps(conversations[i % len(conversations)])
        write_seed(directory, name,
                   template.encode() + SEPARATOR + messages.encode())
    seen = set()
    for name in sorted({c["template"] for c in goldens["tool_cases"]}):
        template = read(os.path.join(inputs, "tool-templates", name + ".jinja"))
        if template in seen:  # Hermes 3's is Hermes 2 Pro's
            continue
        seen.add(template)
        conversation = goldens["tool_conversations"]["tool-call-answered"]
        # JSON's literals are Jinja's here: the tools hold no true, false
        # or null.
        variables = "".join(
            "{%%- set %s = %s %%}" % (key, json.dumps(value))
            for key, value in conversation["variables"].items())
        write_seed(directory, "tools-" + name,
                   variables.encode() + template + SEPARATOR +
                   json.dumps(conversation["messages"]).encode())
    for name in sorted({c["template"] for c in goldens["vision_cases"]}):
        template = read(os.path.join(inputs, "vision-templates", name + ".jinja"))
        write_seed(directory, "vision-" + name, template + SEPARATOR +
                   json.dumps(goldens["vision_conversations"]
                              ["two-images-turns"]).encode())
    write_seed(directory, "macros",
               MACRO_TEMPLATE.encode() + SEPARATOR +
               json.dumps(goldens["tool_conversations"]["tool-call"]["messages"]).encode())


def grammar_seeds():
    """The grammars the tests use, each with a text it allows."""
    directory = corpus("fuzz-grammar")
    serve_api = read(os.path.join(HERE, "..", "..", "serve",
                                  "OpenAiApi.cpp")).decode()
    json_grammar = serve_api.split('kJsonObjectGrammar = R"(')[1].split(')";')[0]
    person = read(os.path.join(HERE, "..", "e2e", "Inputs", "grammars",
                               "person.gbnf")).decode()
    seeds = {
        "json": (json_grammar, '{"a": [1, -2.5e3, true, null, '
                               '{"b\\u00e9": "x\\"y"}]}'),
        "person": (person, '{ "name": "Ann", "age": 7, "pets": ["cat"] }'),
        "repeat": ('root ::= ("ab" | [0-9]){2,5} [^\\n]* "\\n" tail\n'
                   'tail ::= | "z"+ # end\n', "ab12ab\u20ac\nzz"),
        "unicode": ('root ::= [\\u3041-\\u309F\\U0001F600-\\U0001F64F]+ '
                    '"." .', "\u3041\u3043\U0001F600.x"),
    }
    seeds["schema"] = (json.dumps({
        "$defs": {"node": {"type": "object", "properties": {
            "v": {"type": ["integer", "null"]},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"},
                     "maxItems": 3}}, "required": ["v"]}},
        "anyOf": [{"$ref": "#/$defs/node"},
                  {"type": "string", "format": "date", "title": "t"},
                  {"enum": ["a", 1, None]}]}), '{"v": 1, "kids": []}')
    # Patterns (a regex to GBNF), integer and number ranges, allOf.
    seeds["ranges"] = (json.dumps({
        "$defs": {"base": {"properties": {"id": {
            "type": "integer", "minimum": -120, "exclusiveMaximum": 4567}},
            "required": ["id"]}},
        "allOf": [{"$ref": "#/$defs/base"}, {"properties": {
            "x": {"type": "number", "minimum": -3, "maximum": 90},
            "code": {"type": "string",
                     "pattern": "^[A-Z]{2}-(\\d{3}|x+)[^\\s\"]?\\.(?:a|b)*$"},
            "loose": {"type": "string", "pattern": "b+c"}}}]}),
        '{"id": -7, "x": 89.5, "code": "AB-123q.ab"}')
    for name, (grammar, text) in seeds.items():
        write_seed(directory, name,
                   grammar.encode() + SEPARATOR + text.encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer-files",
                        help="the built fuzz-tokenizer-files, to write "
                        "fuzz-tokenizer's seeds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        hf_seeds()
        safetensors_seeds()
        lora_adapter_seeds(work)
        gguf_seeds(work)
        llama2c_seed()
        tokenizer_files = tokenizer_file_seeds(work)
        if args.tokenizer_files:
            tokenizer_seeds(args.tokenizer_files, tokenizer_files, work)
        image_seeds()
        audio_seeds(work)
        argument_seeds()
        http_body_seeds()
        serve_request_seeds()
        chat_template_seeds()
        grammar_seeds()
    for target in sorted(os.listdir(os.path.join(HERE, "corpus"))):
        files = glob.glob(os.path.join(HERE, "corpus", target, "*"))
        print(f"{target}: {len(files)} seeds, "
              f"{sum(os.path.getsize(f) for f in files) // 1024} KiB")


if __name__ == "__main__":
    main()
