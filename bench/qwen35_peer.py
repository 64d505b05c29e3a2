#!/usr/bin/env python3
"""bench/qwen35_peer.py: tfmc against llama.cpp on one GGUF file of
Qwen3.5's architecture (llama.cpp's qwen35): Gated DeltaNet layers, three
in four, between layers of gated full attention.

The model is Qwen3.5-0.8B's widths (hidden 1024; 8 heads of 256, 2 KV
heads, RoPE on 64 dims; 16 key and 16 value heads of 128 in the DeltaNet
layers, a convolution of 4; an MLP of 3584; a tied head over the real
248320-token vocabulary), cut to --layers layers, random weights, Q8_0
(written with llama.cpp's gguf-py, whose NumPy quantizer makes llama.cpp's
Q8_0 blocks; norms and the DeltaNet's small tensors f32). Both engines run
the same file on --threads threads, round robin for --rounds rounds, and
report prefill tokens/s of a --prefill-token prompt, how prefill scales
from --prefill / 4 tokens to --prefill (linear: the same tokens/s), and
decode tokens/s of --decode tokens after a --decode-after-token prompt
(tfmc's @decode, the recurrent states and the KV rows cached; llama.cpp's
llama-bench -n with -d), beside the bound the machine's read bandwidth
sets on decode by the weights one token reads (the states, 1.07 MiB a
DeltaNet layer read and written, and the KV rows add a few percent).

    /usr/bin/python3 bench/qwen35_peer.py --llama-cpp LLAMA_BUILD [--layers 8]

LLAMA_BUILD is a CMake build of llama.cpp with llama-bench (see
bench/compare_weight_formats.py for building it from node-llama-cpp's
bundle); its source's gguf-py writes the file.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_peer  # noqa: E402

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, ROPE = 1024, 8, 2, 256, 64
KEY_HEADS, VALUE_HEADS, STATE, CONV, FFN = 16, 16, 128, 4, 3584
VOCAB = 248320


def write_model(llama_src, path, layers, seed=0):
    """The random Q8_0 qwen35 file: every fourth layer attends."""
    model = gguf_peer.RandomGguf(llama_src, path, "qwen35", VOCAB, seed)
    writer, rng, np = model.writer, model.rng, model.np
    a = "qwen35."
    for key, value in {
            "context_length": 262144, "embedding_length": HIDDEN,
            "block_count": layers, "feed_forward_length": FFN,
            "attention.head_count": HEADS, "attention.head_count_kv": KV_HEADS,
            "attention.key_length": HEAD_DIM, "attention.value_length": HEAD_DIM,
            "rope.dimension_count": ROPE, "ssm.conv_kernel": CONV,
            "ssm.state_size": STATE, "ssm.group_count": KEY_HEADS,
            "ssm.time_step_rank": VALUE_HEADS,
            "ssm.inner_size": VALUE_HEADS * STATE,
            "full_attention_interval": 4}.items():
        writer.add_uint32(a + key, value)
    writer.add_array(a + "rope.dimension_sections", [11, 11, 10, 0])
    writer.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(a + "rope.freq_base", 10000000.0)

    matrix = model.matrix

    def vector(name, values):
        writer.add_tensor(name, np.asarray(values, np.float32))

    conv_channels = 2 * KEY_HEADS * STATE + VALUE_HEADS * STATE
    matrix("token_embd.weight", VOCAB, HIDDEN)
    vector("output_norm.weight", np.ones(HIDDEN))
    for l in range(layers):
        b = f"blk.{l}."
        vector(b + "attn_norm.weight", np.ones(HIDDEN))
        vector(b + "post_attention_norm.weight", np.ones(HIDDEN))
        if (l + 1) % 4:
            matrix(b + "attn_qkv.weight", conv_channels, HIDDEN)
            matrix(b + "attn_gate.weight", VALUE_HEADS * STATE, HIDDEN)
            matrix(b + "ssm_beta.weight", VALUE_HEADS, HIDDEN)
            matrix(b + "ssm_alpha.weight", VALUE_HEADS, HIDDEN)
            vector(b + "ssm_dt.bias", rng.normal(1, 0.1, VALUE_HEADS))
            vector(b + "ssm_a", -rng.uniform(0.5, 4, VALUE_HEADS))
            vector(b + "ssm_conv1d.weight",
                   rng.normal(0, 0.3, (conv_channels, CONV)))
            vector(b + "ssm_norm.weight", np.ones(STATE))
            matrix(b + "ssm_out.weight", HIDDEN, VALUE_HEADS * STATE)
        else:
            matrix(b + "attn_q.weight", 2 * HEADS * HEAD_DIM, HIDDEN)
            matrix(b + "attn_k.weight", KV_HEADS * HEAD_DIM, HIDDEN)
            matrix(b + "attn_v.weight", KV_HEADS * HEAD_DIM, HIDDEN)
            matrix(b + "attn_output.weight", HIDDEN, HEADS * HEAD_DIM)
            vector(b + "attn_q_norm.weight", np.ones(HEAD_DIM))
            vector(b + "attn_k_norm.weight", np.ones(HEAD_DIM))
        matrix(b + "ffn_gate.weight", FFN, HIDDEN)
        matrix(b + "ffn_up.weight", FFN, HIDDEN)
        matrix(b + "ffn_down.weight", HIDDEN, FFN)
    model.finish()


def main():
    args = gguf_peer.arguments("/tmp/tfm-qwen35-bench", 8).parse_args()
    gguf_peer.run(args, "Qwen3.5-0.8B widths, Q8_0",
                  f"qwen35-{args.layers}-q8_0.gguf", write_model)


if __name__ == "__main__":
    main()
