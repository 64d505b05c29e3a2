#!/usr/bin/env python3
"""The token mask's cost (issue 74), measured directly: a random-weight
model with a Qwen2.5-sized vocabulary (151,936 rows: a byte-level BPE
vocabulary of that size from make_big_vocab.py) compiled as a library;
through the runtime's C API (ctypes), the time to build a grammar for it
(tfm_grammar_new: every token's bytes and their trie) and each step's
tfm_grammar_matcher_mask, along a text chosen at random among the tokens
each mask allows (adversarial: long strings, every cache state), for
llama.cpp's JSON grammar (response_format json_object) and a JSON
schema's. Also the model's own decode time per token, in the same run.

    python3 bench/grammar_mask.py [STEPS]
"""
import ctypes
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tfmc  # noqa: E402
from tfmc._abi import Status  # noqa: E402

SCHEMA = ('{"type": "object", "properties": {"name": {"type": "string"}, '
          '"age": {"type": "integer", "minimum": 0}, "tags": {"type": '
          '"array", "items": {"type": "string"}}}, "required": ["name"]}')


def json_object_grammar():
    source = open(os.path.join(ROOT, "serve", "OpenAiApi.cpp")).read()
    return source.split('kJsonObjectGrammar = R"(')[1].split(')";')[0]


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    work = tempfile.mkdtemp()
    run = lambda *a: subprocess.run(a, check=True, capture_output=True,
                                    text=True)
    run(sys.executable, os.path.join(ROOT, "bench", "make_big_vocab.py"),
        work + "/vocab", "151936",
        os.path.join(ROOT, "..", "shared", "data", "tinystories-eval.txt"))
    run(sys.executable, os.path.join(ROOT, "test", "e2e", "write_gguf.py"),
        work + "/model.gguf", "--random", "256,2,4,2,512,151936",
        "--gpt2-tokenizer", work + "/vocab",
        "--set", "llama.context_length=1024")
    tfmc_bin = os.path.join(ROOT, "build", "bin", "tfmc")
    run(tfmc_bin, "-q", work + "/model.gguf", "--emit=lib",
        "-o", work + "/libbig.so")
    run(tfmc_bin, "-q", work + "/model.gguf", "-o", work + "/big")
    stats = run(work + "/big", "--prompt", "{", "-n", "128", "--ignore-eos",
                "--stats").stderr
    decode = float(re.search(r'"decode_tokens_per_s": *([0-9.]+)',
                             stats).group(1))
    m = tfmc.load(work + "/libbig.so")
    lib, vocab = m._library, m._desc.vocab_size
    lib.tfm_grammar_matcher_new.argtypes = [ctypes.c_void_p,
                                            ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.POINTER(Status)]
    lib.tfm_grammar_matcher_mask.restype = ctypes.c_int64
    lib.tfm_grammar_matcher_mask.argtypes = [ctypes.c_void_p,
                                             ctypes.POINTER(ctypes.c_float)]
    lib.tfm_grammar_matcher_accept.argtypes = [ctypes.c_void_p,
                                               ctypes.c_int32,
                                               ctypes.POINTER(Status)]
    lib.tfm_grammar_matcher_free.argtypes = [ctypes.c_void_p]
    print(f"machine: {os.uname().machine}, "
          f"{open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"model: vocabulary {vocab}, decode {1000 / decode:.2f} ms/token "
          f"(greedy, the executable's --stats)")
    rng = random.Random(1)
    # The first grammar reads the vocabulary into the trie the tokenizer
    # then keeps; the second shares it (tfm-serve's later requests).
    for name, gbnf in [("json_object", json_object_grammar().encode()),
                       ("json_schema", m._schema_grammar(SCHEMA))]:
        status, grammar = Status(), ctypes.c_void_p()
        start = time.perf_counter()
        tfmc._check(lib.tfm_grammar_new(gbnf, m._tokenizer,
                                        ctypes.byref(m._desc),
                                        ctypes.byref(grammar),
                                        ctypes.byref(status)), status)
        built = time.perf_counter() - start
        matcher = ctypes.c_void_p()
        tfmc._check(lib.tfm_grammar_matcher_new(grammar, ctypes.byref(matcher),
                                                ctypes.byref(status)), status)
        logits = (ctypes.c_float * vocab)()
        times, allowed_counts = [], []
        for _ in range(steps):
            ctypes.memset(logits, 0, vocab * 4)
            start = time.perf_counter()
            allowed = lib.tfm_grammar_matcher_mask(matcher, logits)
            times.append(time.perf_counter() - start)
            if allowed <= 0:
                break
            allowed_counts.append(allowed)
            choices = [i for i in range(vocab) if logits[i] == 0.0]
            token = rng.choice(choices)
            tfmc._check(lib.tfm_grammar_matcher_accept(matcher, token,
                                                       ctypes.byref(status)),
                        status)
        lib.tfm_grammar_matcher_free(matcher)
        lib.tfm_grammar_free(grammar)
        times_ms = sorted(t * 1000 for t in times)
        print(f"{name}: grammar built in {built * 1000:.1f} ms; mask over "
              f"{len(times)} steps: median {statistics.median(times_ms):.3f} "
              f"ms, p90 {times_ms[int(0.9 * len(times_ms))]:.3f} ms, max "
              f"{times_ms[-1]:.1f} ms, mean {statistics.mean(times_ms):.3f} ms "
              f"({statistics.mean(times_ms) * decode / 10:.1f}% of this "
              f"model's decode); tokens allowed: median "
              f"{int(statistics.median(allowed_counts))}")


if __name__ == "__main__":
    main()
