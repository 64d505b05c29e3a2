#!/usr/bin/env python3
"""bench/gpt_oss_peer.py: tfmc against llama.cpp on one GGUF file of
gpt-oss's architecture (llama.cpp's gpt-oss): attention with sinks, sliding
(128) and full layers alternating, YaRN, and a mixture of experts with
biases and the clamped SwiGLU.

The model is gpt-oss-20b's widths (hidden 2880; 64 heads of 64, 8 KV
heads; 32 experts of 2880, 4 a token; the real 201088-token vocabulary,
untied), cut to --layers layers, random weights, Q8_0, the experts in
--experts (Q8_0, or MXFP4 as the published model stores them; written with
llama.cpp's gguf-py). Both engines run the same file round robin
(gguf_peer.py).

    /usr/bin/python3 bench/gpt_oss_peer.py --llama-cpp LLAMA_BUILD [--layers 2] [--experts MXFP4]

LLAMA_BUILD is a CMake build of llama.cpp with llama-bench (see
bench/compare_weight_formats.py for building it from node-llama-cpp's
bundle); its source's gguf-py writes the file.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_peer  # noqa: E402

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, WINDOW = 2880, 64, 8, 64, 128
EXPERTS, USED, FFN, VOCAB = 32, 4, 2880, 201088


def write_model(llama_src, path, layers, seed=0, experts="Q8_0"):
    """The random gpt-oss file, Q8_0 but for the experts (`experts`): even
    layers sliding."""
    model = gguf_peer.RandomGguf(llama_src, path, "gpt-oss", VOCAB, seed)
    writer, rng, np = model.writer, model.rng, model.np
    a = "gpt-oss."
    for key, value in {
            "context_length": 8192, "embedding_length": HIDDEN,
            "block_count": layers, "feed_forward_length": FFN,
            "expert_feed_forward_length": FFN,
            "attention.head_count": HEADS, "attention.head_count_kv": KV_HEADS,
            "attention.key_length": HEAD_DIM,
            "attention.value_length": HEAD_DIM,
            "attention.sliding_window": WINDOW, "expert_count": EXPERTS,
            "expert_used_count": USED,
            "rope.scaling.original_context_length": 4096}.items():
        writer.add_uint32(a + key, value)
    writer.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-5)
    writer.add_float32(a + "rope.freq_base", 150000.0)
    writer.add_string(a + "rope.scaling.type", "yarn")
    writer.add_float32(a + "rope.scaling.factor", 32.0)

    matrix = model.matrix

    def vector(name, *shape, mean=0.0, scale=0.02):
        writer.add_tensor(name, rng.normal(mean, scale, shape).astype(np.float32))

    matrix("token_embd.weight", VOCAB, HIDDEN)
    vector("output_norm.weight", HIDDEN, mean=1.0)
    matrix("output.weight", VOCAB, HIDDEN)
    for l in range(layers):
        b = f"blk.{l}."
        vector(b + "attn_norm.weight", HIDDEN, mean=1.0)
        vector(b + "post_attention_norm.weight", HIDDEN, mean=1.0)
        for part, rows in (("attn_q", HEADS * HEAD_DIM),
                           ("attn_k", KV_HEADS * HEAD_DIM),
                           ("attn_v", KV_HEADS * HEAD_DIM)):
            matrix(b + part + ".weight", rows, HIDDEN)
            vector(b + part + ".bias", rows)
        matrix(b + "attn_output.weight", HIDDEN, HEADS * HEAD_DIM)
        vector(b + "attn_output.bias", HIDDEN)
        vector(b + "attn_sinks.weight", HEADS, scale=1.0)
        matrix(b + "ffn_gate_inp.weight", EXPERTS, HIDDEN)
        vector(b + "ffn_gate_inp.bias", EXPERTS)
        for part in ("ffn_gate_exps", "ffn_up_exps"):
            matrix(b + part + ".weight", EXPERTS, FFN, HIDDEN, qtype=experts)
            vector(b + part + ".bias", EXPERTS, FFN)
        matrix(b + "ffn_down_exps.weight", EXPERTS, HIDDEN, FFN, qtype=experts)
        vector(b + "ffn_down_exps.bias", EXPERTS, HIDDEN)
    model.finish()


def main():
    parser = gguf_peer.arguments("/tmp/tfm-gpt-oss-bench", 2)
    parser.add_argument("--experts", default="Q8_0", choices=["Q8_0", "MXFP4"])
    args = parser.parse_args()
    gguf_peer.run(args, f"gpt-oss-20b widths, Q8_0, experts {args.experts}",
                  f"gpt-oss-{args.layers}-experts-{args.experts.lower()}.gguf",
                  lambda src, path, layers: write_model(
                      src, path, layers, experts=args.experts))


if __name__ == "__main__":
    main()
