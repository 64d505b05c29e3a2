#!/usr/bin/env python3
"""bench/deepseek_moe_peer.py: tfmc against llama.cpp on one GGUF file of
DeepSeek-V3's architecture (llama.cpp's deepseek2): multi-head latent
attention, DeepSeek's router, shared experts, a dense first layer.

The model is Moonlight-16B-A3B's widths (hidden 2048, 16 heads, kv_lora_rank
512, rope 64, nope 128, value 128, 2 shared experts of 1408, a dense layer
of 11264, top 6) with a q LoRA of 1536 (DeepSeek-V3's and Kimi-K2's;
llama.cpp takes a deepseek2 file without one for V2-Lite only, by its layer
count), cut to --layers layers, --experts experts and a 32000-token
vocabulary, random weights, Q8_0 (written with llama.cpp's gguf-py, whose
NumPy quantizer makes llama.cpp's Q8_0 blocks). Both engines run the same
file on --threads threads, round robin for --rounds rounds:
* decode tokens/s over --new tokens after a --prompt-token prompt;
* prefill tokens/s of a --prefill-token prompt;
* decode as a fraction of its bandwidth bound: the bytes a decode step
  reads (tfmc's --stats weight_bytes_per_token: routed experts counted by
  top_k / experts) over the read bandwidth measured around the run.

    /usr/bin/python3 bench/deepseek_moe_peer.py --llama-cpp LLAMA_BUILD \\
        [--layers 4] [--experts 16]

LLAMA_BUILD is a CMake build of llama.cpp with llama-bench (see
bench/compare_weight_formats.py for building it from node-llama-cpp's
bundle); its source's gguf-py writes the file.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_peers import hardware_limits, prompt_ids, read_bandwidth  # noqa: E402
import gguf_peer  # noqa: E402

HIDDEN, HEADS, Q_RANK, KV_RANK = 2048, 16, 1536, 512
NOPE, ROPE, VALUE = 128, 64, 128
DENSE, EXPERT, SHARED, TOP_K, VOCAB = 11264, 1408, 2, 6, 32000


def write_model(llama_src, path, layers, experts, seed=0):
    """The random Q8_0 deepseek2 file (norms f32)."""
    model = gguf_peer.RandomGguf(llama_src, path, "deepseek2", VOCAB, seed)
    writer, rng, np = model.writer, model.rng, model.np
    a = "deepseek2."
    for key, value in {
            "context_length": 4608, "embedding_length": HIDDEN,
            "block_count": layers, "feed_forward_length": DENSE,
            "attention.head_count": HEADS, "attention.head_count_kv": 1,
            "attention.key_length": KV_RANK + ROPE,
            "attention.value_length": KV_RANK,
            "attention.key_length_mla": NOPE + ROPE,
            "attention.value_length_mla": VALUE,
            "attention.q_lora_rank": Q_RANK, "attention.kv_lora_rank": KV_RANK,
            "rope.dimension_count": ROPE, "leading_dense_block_count": 1,
            "expert_feed_forward_length": EXPERT, "expert_count": experts,
            "expert_used_count": TOP_K, "expert_shared_count": SHARED,
            "expert_gating_func": 2}.items():
        writer.add_uint32(a + key, value)
    writer.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(a + "rope.freq_base", 50000.0)
    writer.add_float32(a + "expert_weights_scale", 2.446)
    writer.add_bool(a + "expert_weights_norm", True)

    matrix = model.matrix

    def norm(name, size):
        writer.add_tensor(name, np.ones(size, np.float32))

    matrix("token_embd.weight", VOCAB, HIDDEN)
    norm("output_norm.weight", HIDDEN)
    matrix("output.weight", VOCAB, HIDDEN)
    for l in range(layers):
        b = f"blk.{l}."
        norm(b + "attn_norm.weight", HIDDEN)
        matrix(b + "attn_q_a.weight", Q_RANK, HIDDEN)
        norm(b + "attn_q_a_norm.weight", Q_RANK)
        matrix(b + "attn_q_b.weight", HEADS * (NOPE + ROPE), Q_RANK)
        matrix(b + "attn_kv_a_mqa.weight", KV_RANK + ROPE, HIDDEN)
        norm(b + "attn_kv_a_norm.weight", KV_RANK)
        matrix(b + "attn_k_b.weight", HEADS, KV_RANK, NOPE)
        matrix(b + "attn_v_b.weight", HEADS, VALUE, KV_RANK)
        matrix(b + "attn_output.weight", HIDDEN, HEADS * VALUE)
        norm(b + "ffn_norm.weight", HIDDEN)
        if l == 0:
            matrix(b + "ffn_gate.weight", DENSE, HIDDEN)
            matrix(b + "ffn_up.weight", DENSE, HIDDEN)
            matrix(b + "ffn_down.weight", HIDDEN, DENSE)
            continue
        writer.add_tensor(b + "ffn_gate_inp.weight",
                          rng.normal(0, 0.02, (experts, HIDDEN)).astype(np.float32))
        writer.add_tensor(b + "exp_probs_b.bias",
                          rng.normal(0, 0.01, experts).astype(np.float32))
        matrix(b + "ffn_gate_exps.weight", experts, EXPERT, HIDDEN)
        matrix(b + "ffn_up_exps.weight", experts, EXPERT, HIDDEN)
        matrix(b + "ffn_down_exps.weight", experts, HIDDEN, EXPERT)
        matrix(b + "ffn_gate_shexp.weight", SHARED * EXPERT, HIDDEN)
        matrix(b + "ffn_up_shexp.weight", SHARED * EXPERT, HIDDEN)
        matrix(b + "ffn_down_shexp.weight", HIDDEN, SHARED * EXPERT)
    model.finish()


def tfmc_cell(exe, args, work):
    def run(prompt, new):
        out = subprocess.run(
            [exe, "--tokens", prompt_ids(prompt, VOCAB), "-n", str(new),
             "--ignore-eos", "--stats", "--warmup", "1"],
            capture_output=True, text=True, check=True,
            env=dict(os.environ, TFM_NUM_THREADS=str(args.threads)))
        return json.loads(out.stderr.strip().splitlines()[-1])
    before = read_bandwidth(work)
    decode = run(args.prompt, args.new)
    after = read_bandwidth(work)
    prefill = run(args.prefill, 1)
    return {"decode": decode["decode_tokens_per_s"],
            "prefill": prefill["prefill_tokens_per_s"],
            "bytes": decode["weight_bytes_per_token"],
            "bandwidth": (before + after) / 2}


def llama_cell(bench, path, args, work):
    def run(flags):
        return json.loads(subprocess.run(
            [bench, "-m", path, "-t", str(args.threads), "-r", "2", "-o", "json"]
            + flags, capture_output=True, text=True, check=True).stdout)[0]["avg_ts"]
    before = read_bandwidth(work)
    decode = run(["-p", "0", "-n", str(args.new), "-d", str(args.prompt)])
    after = read_bandwidth(work)
    prefill = run(["-p", str(args.prefill), "-n", "0"])
    return {"decode": decode, "prefill": prefill,
            "bandwidth": (before + after) / 2}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", required=True, help="llama.cpp build dir")
    parser.add_argument("--work", default="/tmp/tfm-deepseek-bench")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--experts", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    limits = hardware_limits(args.work)
    src = os.path.dirname(os.path.abspath(args.llama_cpp.rstrip("/")))
    path = os.path.join(args.work, f"deepseek2-{args.layers}x{args.experts}-q8_0.gguf")
    if not os.path.exists(path):
        write_model(src, path, args.layers, args.experts)
    exe = os.path.join(args.work, "tfmc-model")
    if not os.path.exists(exe):  # compiled once per work directory
        subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), path, "-q",
                        "-o", exe], check=True)
    bench = os.path.join(args.llama_cpp, "bin", "llama-bench")
    rounds = []
    for _ in range(args.rounds):
        rounds.append((tfmc_cell(exe, args, args.work),
                       llama_cell(bench, path, args, args.work)))
    print(f"machine: read {limits.get('read_gb_per_s', 0):.1f} GB/s at start; "
          f"{args.layers} layers, {args.experts} experts (top {TOP_K}), Q8_0, "
          f"{args.threads} threads")
    for i, (t, l) in enumerate(rounds):
        print(f"round {i}: decode tfmc {t['decode']:.2f} tok/s, llama.cpp "
              f"{l['decode']:.2f} ({t['decode'] / l['decode']:.2f}x); prefill "
              f"tfmc {t['prefill']:.1f}, llama.cpp {l['prefill']:.1f} "
              f"({t['prefill'] / l['prefill']:.2f}x); tfmc decode "
              f"{t['decode'] * t['bytes'] / 1e9 / t['bandwidth']:.0%} of the "
              f"bound ({t['bytes'] / 1e6:.0f} MB a step, "
              f"{t['bandwidth']:.1f} GB/s)")
    median = lambda f: statistics.median(f(t, l) for t, l in rounds)  # noqa: E731
    print(f"median: decode {median(lambda t, l: t['decode'] / l['decode']):.2f}x "
          f"llama.cpp, prefill {median(lambda t, l: t['prefill'] / l['prefill']):.2f}x")


if __name__ == "__main__":
    main()
