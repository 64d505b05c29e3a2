#!/usr/bin/env python3
"""Issue 74's benchmark: greedy decode with and without a JSON schema on a
Qwen2.5-0.5B-shaped model (qwen2 GGUF, 24 layers, 896 wide, 14 heads / 2
KV heads, FFN 4864, tied embeddings, Q8_0; random weights), its vocabulary
a byte-level BPE of 151,936 tokens (make_big_vocab.py, plus
<|endoftext|>), against llama.cpp's llama-completion --json-schema on the
same file and schema, the engines run in turn:

  * decode tokens/s, unconstrained (--ignore-eos) and under the schema
    (whose string bounds make the answer about as long), and the share of
    decode time the mask costs (1 - constrained / unconstrained);
  * first-token latency under the schema: tfmc's grammar_seconds (the
    schema as GBNF, the grammar, the vocabulary's trie) plus its prefill,
    llama.cpp's prompt eval time (its grammar is built before it, within
    its load time, which also maps the weights).

Decode time is the model's and the sampler's, the mask's with it
(llama.cpp's eval time plus its sampling time). Both engines check a
greedy choice against the grammar before masking.

    python3 bench/json_schema_decode.py --llama-cpp LLAMA_BUILD_DIR \
        [--work DIR] [--rounds N] [--threads T]

NumPy and llama.cpp's gguf-py (from the llama.cpp source beside the build
directory) write the model.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_peers import hardware_limits  # noqa: E402

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, VOCAB = 896, 24, 14, 2, 4864, 151936
PROMPT = "Describe a person as JSON:"
SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 24},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "email": {"type": "string", "format": "uuid"},
    "bio": {"type": "string", "minLength": 240, "maxLength": 320},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
             "maxItems": 4}},
    "required": ["name", "age", "bio", "tags"]}


def write_model(llama_src, path, vocab_dir):
    sys.path.insert(0, os.path.join(llama_src, "gguf-py"))
    import gguf  # noqa: E402
    import numpy as np  # noqa: E402
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(path, "qwen2")
    a = "qwen2."
    for key, value in {"context_length": 32768, "embedding_length": HIDDEN,
                       "block_count": LAYERS, "feed_forward_length": FFN,
                       "attention.head_count": HEADS,
                       "attention.head_count_kv": KV_HEADS}.items():
        writer.add_uint32(a + key, value)
    writer.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(a + "rope.freq_base", 1000000.0)
    vocab = json.load(open(os.path.join(vocab_dir, "vocab.json"),
                           encoding="utf-8"))
    tokens = [None] * len(vocab)
    for piece, i in vocab.items():
        tokens[i] = piece
    tokens.append("<|endoftext|>")
    assert len(tokens) == VOCAB, len(tokens)
    merges = [line.rstrip("\n") for line in
              open(os.path.join(vocab_dir, "merges.txt"), encoding="utf-8")
              if line.strip() and not line.startswith("#version")]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.NORMAL] * (VOCAB - 1) +
                           [gguf.TokenType.CONTROL])
    writer.add_token_merges(merges)
    writer.add_eos_token_id(VOCAB - 1)
    writer.add_bos_token_id(VOCAB - 1)
    writer.add_add_bos_token(False)

    def matrix(name, *shape, scale=0.02):
        values = rng.normal(0, scale, shape).astype(np.float32)
        kind = gguf.GGMLQuantizationType.Q8_0
        writer.add_tensor(name, gguf.quants.quantize(values, kind),
                          raw_dtype=kind)

    def vector(name, values):
        writer.add_tensor(name, np.asarray(values, np.float32))

    head = HIDDEN // HEADS
    matrix("token_embd.weight", VOCAB, HIDDEN)
    vector("output_norm.weight", np.ones(HIDDEN))
    for l in range(LAYERS):
        b = f"blk.{l}."
        vector(b + "attn_norm.weight", np.ones(HIDDEN))
        vector(b + "ffn_norm.weight", np.ones(HIDDEN))
        matrix(b + "attn_q.weight", HIDDEN, HIDDEN)
        matrix(b + "attn_k.weight", KV_HEADS * head, HIDDEN)
        matrix(b + "attn_v.weight", KV_HEADS * head, HIDDEN)
        vector(b + "attn_q.bias", rng.normal(0, 0.02, HIDDEN))
        vector(b + "attn_k.bias", rng.normal(0, 0.02, KV_HEADS * head))
        vector(b + "attn_v.bias", rng.normal(0, 0.02, KV_HEADS * head))
        matrix(b + "attn_output.weight", HIDDEN, HIDDEN)
        matrix(b + "ffn_gate.weight", FFN, HIDDEN)
        matrix(b + "ffn_up.weight", FFN, HIDDEN)
        matrix(b + "ffn_down.weight", HIDDEN, FFN)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def tfmc_run(exe, threads, tokens, schema):
    command = [exe, "--prompt", PROMPT, "-n", str(tokens), "--stats"]
    command += ["--json-schema", json.dumps(schema)] if schema else \
        ["--ignore-eos"]
    out = subprocess.run(command, capture_output=True, text=True, check=True,
                         env=dict(os.environ, TFM_NUM_THREADS=str(threads)))
    stats = json.loads(out.stderr.strip().splitlines()[-1])
    text = out.stdout[len(PROMPT):].strip()
    return stats, text


def llama_run(completion, path, threads, tokens, schema):
    command = [completion, "-m", path, "-p", PROMPT, "-n", str(tokens),
               "-t", str(threads), "--temp", "0", "-no-cnv", "--no-warmup",
               "--seed", "1"]
    command += ["--json-schema", json.dumps(schema)] if schema else \
        ["--ignore-eos"]
    out = subprocess.run(command, capture_output=True, text=True, check=True,
                         stdin=subprocess.DEVNULL)
    log = out.stderr
    eval_ms, runs = map(float, re.search(
        r"\beval time =\s*([0-9.]+) ms /\s*([0-9]+) runs", log).groups())
    prompt_ms = float(re.search(r"prompt eval time =\s*([0-9.]+) ms",
                                log).group(1))
    load_ms = float(re.search(r"load time =\s*([0-9.]+) ms", log).group(1))
    # Its eval time leaves sampling out; the grammar is sampling's.
    sampling_ms = float(re.search(r"sampling time =\s*([0-9.]+) ms",
                                  log).group(1))
    text = out.stdout.split(PROMPT, 1)[-1].strip()
    return {"decode_tokens_per_s":
            1000 * runs / (eval_ms + sampling_ms) if eval_ms else 0,
            "tokens": runs, "prompt_ms": prompt_ms, "load_ms": load_ms}, text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", required=True,
                        help="llama.cpp's build directory")
    parser.add_argument("--work", default="/tmp/tfm-json-schema-bench")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=160)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    limits = hardware_limits(args.work)
    vocab_dir = os.path.join(args.work, "vocab")
    if not os.path.exists(os.path.join(vocab_dir, "vocab.json")):
        subprocess.run([sys.executable, os.path.join(HERE, "make_big_vocab.py"),
                        vocab_dir, str(VOCAB - 1),
                        os.path.join(ROOT, "..", "shared", "data",
                                     "tinystories-eval.txt")], check=True)
    path = os.path.join(args.work, "qwen2.5-0.5b-shape-q8_0.gguf")
    if not os.path.exists(path):
        write_model(os.path.dirname(os.path.abspath(
            args.llama_cpp.rstrip("/"))), path, vocab_dir)
    exe = os.path.join(args.work, "qwen-tfmc")
    if not os.path.exists(exe):
        start = time.time()
        subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), path,
                        "-q", "-o", exe], check=True)
        print(f"tfmc compiled the model in {time.time() - start:.0f} s")
    completion = os.path.join(args.llama_cpp, "bin", "llama-completion")
    rounds = []
    for _ in range(args.rounds):
        free, _ = tfmc_run(exe, args.threads, args.tokens, None)
        bound, text = tfmc_run(exe, args.threads, args.tokens, SCHEMA)
        json.loads(text)  # the schema's answer is JSON
        peer_free, _ = llama_run(completion, path, args.threads, args.tokens,
                                 None)
        peer_bound, peer_text = llama_run(completion, path, args.threads,
                                          args.tokens, SCHEMA)
        rounds.append((free, bound, peer_free, peer_bound, len(text),
                       peer_text))
    print(f"machine: read {limits.get('read_gb_per_s', 0):.1f} GB/s at "
          f"start; {os.cpu_count()} CPUs, {args.threads} threads; "
          f"{time.strftime('%Y-%m-%d')}")
    for i, (free, bound, pf, pb, chars, _) in enumerate(rounds):
        first_ms = 1000 * (bound["grammar_seconds"] + bound["prefill_seconds"])
        print(f"round {i}: tfmc decode {free['decode_tokens_per_s']:.1f} "
              f"tok/s free, {bound['decode_tokens_per_s']:.1f} under the "
              f"schema ({bound['generated_tokens']} tokens, {chars} chars; "
              f"mask {1 - bound['decode_tokens_per_s'] / free['decode_tokens_per_s']:.1%} "
              f"of decode); first token {first_ms:.0f} ms (grammar "
              f"{1000 * bound['grammar_seconds']:.0f} ms); llama.cpp "
              f"{pf['decode_tokens_per_s']:.1f} free, "
              f"{pb['decode_tokens_per_s']:.1f} under the schema "
              f"({pb['tokens']:.0f} tokens; "
              f"{1 - pb['decode_tokens_per_s'] / pf['decode_tokens_per_s']:.1%}"
              f"), prompt eval {pb['prompt_ms']:.0f} ms, load "
              f"{pb['load_ms']:.0f} ms")
    median = lambda f: statistics.median(f(r) for r in rounds)  # noqa: E731
    tfmc_share = median(lambda r: 1 - r[1]["decode_tokens_per_s"] /
                        r[0]["decode_tokens_per_s"])
    peer_share = median(lambda r: 1 - r[3]["decode_tokens_per_s"] /
                        r[2]["decode_tokens_per_s"])
    print(f"median: the mask costs tfmc {tfmc_share:.1%} of decode "
          f"(target <= 5%), llama.cpp's grammar {peer_share:.1%}; decode "
          f"under the schema {median(lambda r: r[1]['decode_tokens_per_s']):.1f}"
          f" tok/s vs llama.cpp "
          f"{median(lambda r: r[3]['decode_tokens_per_s']):.1f}")


if __name__ == "__main__":
    main()
