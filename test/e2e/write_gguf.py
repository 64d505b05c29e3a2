#!/usr/bin/env python3
"""Writes LLaMA models as GGUF files (llama.cpp's format, version 3) for the
GGUF tests, with the Python standard library only (CI has no NumPy).

Weights come from a Hugging Face LLaMA directory (F32 safetensors: Q and K
rows permuted to llama.cpp's layout, as its convert_hf_to_gguf.py does) or
are drawn at random from a seed (already in llama.cpp's layout). Matrices are
stored in --type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K to
Q6_K, IQ4_NL, IQ4_XS), the token embedding and LM head in --edge-type; a
matrix whose rows are not whole blocks falls back to F16, as
llama-quantize falls back. The quantizers make valid blocks of each format
(Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 as llama.cpp's reference quantizers do;
the K-quants and IQ4 from each sub-block's range or peak), not llama.cpp's
error-minimizing search. Tokenizers: a llama2.c tokenizer.bin spelled as
SentencePiece pieces ("llama"), or GPT-2's vocab.json + merges.txt
("gpt2").

--break writes a malformed file for the reader's error tests.

    write_gguf.py OUT.gguf --hf DIR [--sp-tokenizer tokenizer.bin]
    write_gguf.py OUT.gguf --hf QWEN2_DIR --arch qwen2
    write_gguf.py OUT.gguf --hf QWEN3_5_DIR --arch qwen35 (gguf_qwen_hybrid.py)
    write_gguf.py OUT.gguf --hf GPT_OSS_DIR --arch gpt-oss (gguf_gpt_oss.py)
    write_gguf.py OUT.gguf --hf GEMMA4_DIR --arch gemma4 (gguf_gemma4.py)
    write_gguf.py OUT.gguf --random 256,1,4,1,256,32 --type Q4_K
"""
import argparse
import array
import json
import math
import os
import re
import struct

import gguf_gemma4
import gguf_gpt_oss
import gguf_qwen_hybrid
from gguf_gpt_oss import Encoded

GGML_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7,
              "Q8_0": 8, "Q2_K": 10, "Q3_K": 11, "Q4_K": 12, "Q5_K": 13,
              "Q6_K": 14, "IQ2_XXS": 16, "IQ4_NL": 20, "IQ4_XS": 23,
              "BF16": 30, "MXFP4": 39}
BLOCK_ELEMENTS = {"F32": 1, "F16": 1, "BF16": 1, "Q8_0": 32, "Q4_0": 32,
                  "Q4_1": 32, "Q5_0": 32, "Q5_1": 32, "IQ4_NL": 32,
                  "Q2_K": 256, "Q3_K": 256, "Q4_K": 256, "Q5_K": 256,
                  "Q6_K": 256, "IQ4_XS": 256, "MXFP4": 32}
ALIGNMENT = 32

# ------------------------------------------------------------ numbers


def f16_bits(x):
    return struct.unpack("<H", struct.pack("<e", x))[0]


def f16_round(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def bf16_bits(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def round_half_away(x):
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


# ------------------------------------------------------------ encoders


def encode_q8_0(block):
    amax = max(abs(v) for v in block)
    d = amax / 127.0
    inv = 1.0 / d if d else 0.0
    out = bytearray(struct.pack("<H", f16_bits(d)))
    out += bytes((round_half_away(v * inv) & 0xFF) for v in block)
    return out


def encode_q4_0(block):
    peak = max(block, key=abs)
    d = peak / -8.0
    inv = 1.0 / d if d else 0.0
    q = [min(15, int(v * inv + 8.5)) for v in block]
    out = bytearray(struct.pack("<H", f16_bits(d)))
    out += bytes(q[j] | q[j + 16] << 4 for j in range(16))
    return out


def encode_q4_1(block):
    low, high = min(block), max(block)
    d = (high - low) / 15.0
    inv = 1.0 / d if d else 0.0
    q = [min(15, int((v - low) * inv + 0.5)) for v in block]
    out = bytearray(struct.pack("<HH", f16_bits(d), f16_bits(low)))
    out += bytes(q[j] | q[j + 16] << 4 for j in range(16))
    return out


def nibbles(q):
    """32 codes as 16 bytes: code j in the low nibble of byte j, code
    j + 16 in its high nibble."""
    return bytes((q[j] & 0xF) | (q[j + 16] & 0xF) << 4 for j in range(16))


def fifth_bits(q):
    return struct.pack("<I", sum((q[j] >> 4) << j for j in range(32)))


def encode_q5_0(block):
    peak = max(block, key=abs)
    d = peak / -16.0
    inv = 1.0 / d if d else 0.0
    q = [min(31, int(v * inv + 16.5)) for v in block]
    return struct.pack("<H", f16_bits(d)) + fifth_bits(q) + nibbles(q)


def encode_q5_1(block):
    low, high = min(block), max(block)
    d = (high - low) / 31.0
    inv = 1.0 / d if d else 0.0
    q = [min(31, int((v - low) * inv + 0.5)) for v in block]
    return struct.pack("<HH", f16_bits(d), f16_bits(low)) + fifth_bits(q) + \
        nibbles(q)


def scales_mins(block, sub_size, levels, scale_max):
    """Sub-blocks of `sub_size` with codes in [0, levels] on d·scale steps
    above -dmin·min, each scale and min in [0, scale_max] (Q2_K's 4 bits,
    Q4_K's and Q5_K's 6); (d, dmin, scales, mins, codes)."""
    subs = [block[i:i + sub_size] for i in range(0, len(block), sub_size)]
    ranges = [(min(0.0, min(sub)), max(sub)) for sub in subs]
    scales = [(high - low) / levels for low, high in ranges]
    mins = [-low for low, _ in ranges]
    d = f16_round(max(scales) / scale_max)
    dmin = f16_round(max(mins) / scale_max)
    sc = [min(scale_max, round_half_away(s / d)) if d else 0 for s in scales]
    mn = [min(scale_max, round_half_away(m / dmin)) if dmin else 0
          for m in mins]
    q = []
    for s, sub in enumerate(subs):
        step, offset = d * sc[s], dmin * mn[s]
        for v in sub:
            q.append(max(0, min(levels, round_half_away((v + offset) / step)))
                     if step else 0)
    return d, dmin, sc, mn, q


def k_scales_mins(block, levels):
    """Q4_K's and Q5_K's 8 sub-blocks of 32, their 6-bit scales and mins
    packed in 12 bytes; (d, dmin, packed, codes)."""
    d, dmin, sc, mn, q = scales_mins(block, 32, levels, 63)
    packed = [0] * 12
    for j in range(4):
        packed[j] = sc[j] | (sc[j + 4] >> 4) << 6
        packed[j + 4] = mn[j] | (mn[j + 4] >> 4) << 6
        packed[j + 8] = (sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4
    return d, dmin, bytes(packed), q


def encode_q4_k(block):
    d, dmin, packed, q = k_scales_mins(block, 15)
    out = bytearray(struct.pack("<HH", f16_bits(d), f16_bits(dmin)))
    out += packed
    for pair in range(4):
        out += bytes(q[64 * pair + l] | q[64 * pair + 32 + l] << 4
                     for l in range(32))
    return out


def encode_q5_k(block):
    d, dmin, packed, q = k_scales_mins(block, 31)
    qh = bytes(sum((q[32 * s + l] >> 4) << s for s in range(8))
               for l in range(32))
    out = bytearray(struct.pack("<HH", f16_bits(d), f16_bits(dmin)))
    out += packed + qh
    for pair in range(4):
        out += bytes((q[64 * pair + l] & 0xF) | (q[64 * pair + 32 + l] & 0xF)
                     << 4 for l in range(32))
    return out


def two_bit_layout(q):
    """Q2_K's and Q3_K's 64 bytes of 2-bit codes: element 128h + 32k +
    16p + l at bits 2k of byte 32h + 16p + l."""
    qs = bytearray(64)
    for i, code in enumerate(q):
        h, k, p, l = i // 128, i % 128 // 32, i % 32 // 16, i % 16
        qs[32 * h + 16 * p + l] |= (code & 3) << (2 * k)
    return qs


def encode_q2_k(block):
    d, dmin, sc, mn, q = scales_mins(block, 16, 3, 15)
    return bytes(sc[s] | mn[s] << 4 for s in range(16)) + two_bit_layout(q) + \
        struct.pack("<HH", f16_bits(d), f16_bits(dmin))


def encode_q3_k(block):
    sub_scales = [max(block[16 * s:16 * s + 16], key=abs) / -4.0
                  for s in range(16)]
    d = f16_round(max(abs(s) for s in sub_scales) / 31.0)
    sc = [max(-32, min(31, round_half_away(s / d))) if d else 0
          for s in sub_scales]
    q = []  # codes + 4, in [0, 7]
    for i, v in enumerate(block):
        step = d * sc[i // 16]
        q.append(max(-4, min(3, round_half_away(v / step))) + 4 if step else 4)
    hmask = bytearray(32)
    for i, code in enumerate(q):
        if code >= 4:
            hmask[i % 32] |= 1 << (4 * (i // 128) + i % 128 // 32)
    packed = bytearray(12)
    for j, scale in enumerate(sc):
        u = scale + 32
        packed[j % 8] |= (u & 0xF) << (4 * (j // 8))
        packed[8 + j % 4] |= (u >> 4) << (2 * (j // 4))
    low_bits = [code - 4 if code >= 4 else code for code in q]
    return bytes(hmask) + two_bit_layout(low_bits) + bytes(packed) + \
        struct.pack("<H", f16_bits(d))


IQ4_LEVELS = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69,
              89, 113]


def iq4_codes(block, d):
    inv = 1.0 / d if d else 0.0
    return [min(range(16), key=lambda k: abs(IQ4_LEVELS[k] - v * inv))
            for v in block]


def encode_iq4_nl(block):
    d = f16_round(max(block, key=abs) / -127.0)
    return struct.pack("<H", f16_bits(d)) + nibbles(iq4_codes(block, d))


def encode_iq4_xs(block):
    sub_scales = [max(block[32 * s:32 * s + 32], key=abs) / -127.0
                  for s in range(8)]
    d = f16_round(max(abs(s) for s in sub_scales) / 31.0)
    ls = [max(-32, min(31, round_half_away(s / d))) + 32 if d else 32
          for s in sub_scales]
    high = sum((u >> 4) << (2 * s) for s, u in enumerate(ls))
    low = bytes((ls[2 * i] & 0xF) | (ls[2 * i + 1] & 0xF) << 4
                for i in range(4))
    qs = b"".join(nibbles(iq4_codes(block[32 * s:32 * s + 32],
                                    d * (ls[s] - 32))) for s in range(8))
    return struct.pack("<HH", f16_bits(d), high) + low + qs


def encode_q6_k(block):
    sub_scales = []
    for s in range(16):
        peak = max(block[16 * s:16 * s + 16], key=abs)
        sub_scales.append(peak / -32.0)
    top = max(sub_scales, key=abs)
    d = f16_round(top / -128.0) if top else 0.0
    sc = [max(-128, min(127, round_half_away(s / d))) if d else 0
          for s in sub_scales]
    q = []
    for i, v in enumerate(block):
        step = d * sc[i // 16]
        q.append(max(-32, min(31, round_half_away(v / step))) + 32
                 if step else 32)
    ql, qh = bytearray(128), bytearray(64)
    for half in range(2):
        for l in range(32):
            q1, q2, q3, q4 = (q[128 * half + 32 * k + l] for k in range(4))
            ql[64 * half + l] = (q1 & 0xF) | (q3 & 0xF) << 4
            ql[64 * half + 32 + l] = (q2 & 0xF) | (q4 & 0xF) << 4
            qh[32 * half + l] = (q1 >> 4) | (q2 >> 4) << 2 | \
                (q3 >> 4) << 4 | (q4 >> 4) << 6
    return ql + qh + bytes(s & 0xFF for s in sc) + struct.pack("<H", f16_bits(d))


ENCODERS = {"Q8_0": encode_q8_0, "Q4_0": encode_q4_0, "Q4_1": encode_q4_1,
            "Q5_0": encode_q5_0, "Q5_1": encode_q5_1, "Q2_K": encode_q2_k,
            "Q3_K": encode_q3_k, "Q4_K": encode_q4_k, "Q5_K": encode_q5_k,
            "Q6_K": encode_q6_k, "IQ4_NL": encode_iq4_nl,
            "IQ4_XS": encode_iq4_xs}


def encode(values, ggml_type):
    if ggml_type == "F32":
        return array.array("f", values).tobytes()
    if ggml_type == "F16":
        return struct.pack(f"<{len(values)}e", *values)
    if ggml_type == "BF16":
        return struct.pack(f"<{len(values)}H", *(bf16_bits(v) for v in values))
    n = BLOCK_ELEMENTS[ggml_type]
    encoder = ENCODERS[ggml_type]
    return b"".join(encoder(values[i:i + n]) for i in range(0, len(values), n))


# ------------------------------------------------------------ models


def permute_rows(values, rows, cols, heads):
    """convert_hf_to_gguf's LlamaModel.permute: HF's half-split rotary rows
    of each head become adjacent pairs."""
    head_dim = rows // heads
    out = []
    for h in range(heads):
        for i in range(head_dim // 2):
            for half in range(2):
                r = h * head_dim + half * (head_dim // 2) + i
                out.extend(values[r * cols:(r + 1) * cols])
    return out


HF_NAMES = {"model.embed_tokens.weight": "token_embd.weight",
            "model.norm.weight": "output_norm.weight",
            "lm_head.weight": "output.weight"}
HF_LAYER_NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
                  "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                  "self_attn.o_proj": "attn_output",
                  "post_attention_layernorm": "ffn_norm",
                  "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                  "mlp.down_proj": "ffn_down",
                  "self_attn.q_norm": "attn_q_norm",
                  "self_attn.k_norm": "attn_k_norm",
                  # Phi-3's fused projections, kept fused
                  "self_attn.qkv_proj": "attn_qkv",
                  "mlp.gate_up_proj": "ffn_up"}
# Gemma 2 and 3 norm each branch's output too; their MLP's input norm is
# pre_feedforward_layernorm, and post_attention_layernorm is the
# attention's output norm (llama.cpp's attn_post_norm), not the MLP's
# input norm as in LLaMA.
HF_LAYER_NAMES_GEMMA2 = {**HF_LAYER_NAMES,
                         "post_attention_layernorm": "post_attention_norm",
                         "pre_feedforward_layernorm": "ffn_norm",
                         "post_feedforward_layernorm": "post_ffw_norm"}


# Experts, stacked per layer as llama.cpp's converter writes them
# ([experts, rows, columns]): Mixtral's (block_sparse_moe, w1 w3 w2) and
# Qwen2-MoE's (mlp, gate_proj up_proj down_proj).
EXPERT_NAMES = {"w1": "ffn_gate_exps", "w3": "ffn_up_exps",
                "w2": "ffn_down_exps", "gate_proj": "ffn_gate_exps",
                "up_proj": "ffn_up_exps", "down_proj": "ffn_down_exps"}
# Qwen2-MoE's shared expert and its gate vector (written as [hidden]).
HF_LAYER_NAMES_MOE = {"mlp.gate": "ffn_gate_inp",
                      "mlp.shared_expert.gate_proj": "ffn_gate_shexp",
                      "mlp.shared_expert.up_proj": "ffn_up_shexp",
                      "mlp.shared_expert.down_proj": "ffn_down_shexp",
                      "mlp.shared_expert_gate": "ffn_gate_inp_shexp"}


def gguf_name(hf_name, arch="llama"):
    """llama.cpp's name of a Hugging Face LLaMA (or Qwen2, Qwen3, OLMoE,
    Gemma 2 and 3) tensor."""
    m = re.match(r"model\.layers\.(\d+)\.block_sparse_moe\.gate\.weight$",
                 hf_name)
    if m:
        return f"blk.{m.group(1)}.ffn_gate_inp.weight"
    m = re.match(r"model\.layers\.(\d+)\.(.*)\.(weight|bias)$", hf_name)
    if not m:
        return HF_NAMES[hf_name]
    layer_names = HF_LAYER_NAMES_GEMMA2 if arch in ("gemma2", "gemma3") \
        else HF_LAYER_NAMES
    if arch == "glm4moe":
        # GLM's MLP norm is llama.cpp's attn_post_norm.
        layer_names = {**layer_names,
                       "post_attention_layernorm": "post_attention_norm"}
    names = {**layer_names, **HF_LAYER_NAMES_MOE, **HF_LAYER_NAMES_DEEPSEEK2}
    return f"blk.{m.group(1)}.{names[m.group(2)]}.{m.group(3)}"


# DeepSeek-V2/V3's attention and router (llama.cpp's deepseek2).
HF_LAYER_NAMES_DEEPSEEK2 = {
    "self_attn.q_a_proj": "attn_q_a", "self_attn.q_a_layernorm": "attn_q_a_norm",
    "self_attn.q_b_proj": "attn_q_b",
    "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa",
    "self_attn.kv_a_layernorm": "attn_kv_a_norm",
    "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
    "mlp.shared_experts.up_proj": "ffn_up_shexp",
    "mlp.shared_experts.down_proj": "ffn_down_shexp"}


def deepseek2_tensors(config, tensors):
    """What llama.cpp's DeepseekV2Model converter (and, but for kv_b_proj,
    its Glm4MoeModel) writes beside the LLaMA names: kv_b_proj split per head into attn_k_b ([heads, latent, nope],
    each head's key rows transposed) and attn_v_b ([heads, value, latent]),
    e_score_correction_bias as exp_probs_b.bias; the multi-token prediction
    layers left out. Returns (name, shape, values) and removes what it
    wrote from `tensors`."""
    heads = config["num_attention_heads"]
    nope, value = config.get("qk_nope_head_dim"), config.get("v_head_dim")
    rank = config.get("kv_lora_rank")
    out = []
    for name in list(tensors):
        m = re.match(r"model\.layers\.(\d+)\.(.*)$", name)
        if not m:
            continue
        layer, rest = int(m.group(1)), m.group(2)
        if layer >= config["num_hidden_layers"]:
            del tensors[name]
            continue
        if rest == "self_attn.kv_b_proj.weight":
            _, values = tensors.pop(name)
            k_b, v_b = [], []
            for h in range(heads):
                base = h * (nope + value)
                for j in range(rank):
                    k_b.extend(values[(base + i) * rank + j]
                               for i in range(nope))
                v_b.extend(values[(base + nope) * rank:
                                  (base + nope + value) * rank])
            out.append((f"blk.{layer}.attn_k_b.weight", [heads, rank, nope], k_b))
            out.append((f"blk.{layer}.attn_v_b.weight", [heads, value, rank], v_b))
        elif rest == "mlp.gate.e_score_correction_bias":
            out.append((f"blk.{layer}.exp_probs_b.bias", *tensors.pop(name)))
    return out


def deepseek2_metadata(config):
    """deepseek2's hyperparameters as llama.cpp's converter writes them."""
    rope = config["qk_rope_head_dim"]
    rank = config["kv_lora_rank"]
    hp = {"attention.head_count_kv": 1,
          "attention.key_length": rank + rope, "attention.value_length": rank,
          "attention.key_length_mla": config["qk_nope_head_dim"] + rope,
          "attention.value_length_mla": config["v_head_dim"],
          "attention.kv_lora_rank": rank, "rope.dimension_count": rope,
          "leading_dense_block_count": config.get("first_k_dense_replace", 0),
          "expert_shared_count": config.get("n_shared_experts") or 0,
          "expert_weights_scale": float(config.get("routed_scaling_factor", 1.0)),
          "expert_gating_func": 2 if config.get("scoring_func") == "sigmoid" else 1}
    if config.get("q_lora_rank"):
        hp["attention.q_lora_rank"] = config["q_lora_rank"]
    if config.get("norm_topk_prob"):
        hp["expert_weights_norm"] = True
    if config.get("topk_method") == "noaux_tc":
        hp["expert_group_count"] = config["n_group"]
        hp["expert_group_used_count"] = config["topk_group"]
    scaling = config.get("rope_scaling") or {}
    if scaling.get("type", scaling.get("rope_type")) == "yarn":
        hp.update({"rope.scaling.type": "yarn",
                   "rope.scaling.factor": float(scaling["factor"]),
                   "rope.scaling.original_context_length":
                       scaling["original_max_position_embeddings"],
                   "rope.scaling.yarn_beta_fast": float(scaling.get("beta_fast", 32)),
                   "rope.scaling.yarn_beta_slow": float(scaling.get("beta_slow", 1)),
                   "rope.scaling.yarn_log_multiplier":
                       0.1 * scaling.get("mscale_all_dim", 0)})
    return hp


def glm4moe_metadata(config):
    """glm4moe's hyperparameters as llama.cpp's Glm4MoeModel writes them."""
    head_dim = config["head_dim"]
    return {"attention.key_length": head_dim,
            "attention.value_length": head_dim,
            "rope.dimension_count":
                int(head_dim * config.get("partial_rotary_factor", 0.5)),
            "leading_dense_block_count": config.get("first_k_dense_replace", 1),
            "expert_shared_count": config.get("n_shared_experts", 1),
            "expert_weights_scale":
                float(config.get("routed_scaling_factor", 1.0)),
            "expert_weights_norm": bool(config.get("norm_topk_prob", True)),
            "expert_gating_func": 2}


def read_hf(directory, arch):
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    return convert_hf(config, read_safetensors(directory), arch)


def read_safetensors(directory):
    """model.safetensors' tensors by name: (shape, floats), or (shape,
    bytes) for U8."""
    with open(os.path.join(directory, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] in ("F32", "BF16", "U8"), \
            f"{name}: F32, BF16 or U8 only"
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        if info["dtype"] == "U8":  # MXFP4 blocks: bytes, as stored
            tensors[name] = (info["shape"], raw)
            continue
        if info["dtype"] == "BF16":
            # A bf16 value is the high half of its f32.
            widened = bytearray(2 * len(raw))
            widened[2::4] = raw[0::2]
            widened[3::4] = raw[1::2]
            raw = bytes(widened)
        tensors[name] = (info["shape"], list(array.array("f", raw)))
    return tensors


def convert_hf(config, tensors, arch):
    """The metadata and tensors llama.cpp's converter writes for a Hugging
    Face model's config and tensors."""
    if arch in gguf_qwen_hybrid.ARCHES:
        return gguf_qwen_hybrid.convert(config, tensors, arch)
    if arch in gguf_gpt_oss.ARCHES:
        return gguf_gpt_oss.convert(config, tensors, arch)
    if arch in gguf_gemma4.ARCHES:
        return gguf_gemma4.convert(config, tensors, arch)
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    out = deepseek2_tensors(config, tensors) \
        if arch in ("deepseek2", "glm4moe") else []
    # Experts stacked: blk.N.ffn_*_exps [experts, rows, columns].
    experts = config.get("num_local_experts",
                         config.get("num_experts",
                                    config.get("n_routed_experts", 0)))
    block = "block_sparse_moe" if "num_local_experts" in config else "mlp"
    for layer in range(config["num_hidden_layers"] if experts else 0):
        for part, target in EXPERT_NAMES.items():
            names = [f"model.layers.{layer}.{block}.experts.{e}."
                     f"{part}.weight" for e in range(experts)]
            if names[0] not in tensors:
                continue
            shape = [experts] + tensors[names[0]][0]
            values = [v for n in names for v in tensors.pop(n)[1]]
            out.append((f"blk.{layer}.{target}.weight", shape, values))
    for name, (shape, values) in tensors.items():
        target = gguf_name(name, arch)
        # llama.cpp permutes LLaMA's Q and K rows (not Qwen2's nor Gemma's:
        # NEOX RoPE), and adds Gemma's 1 to its RMSNorm weights (Gemma 3's
        # Q and K norms too).
        if arch in ("gemma", "gemma2", "gemma3") and \
                target.endswith("norm.weight"):
            values = [v + 1.0 for v in values]
        if arch == "llama" and target.endswith("attn_q.weight"):
            values = permute_rows(values, shape[0], shape[1], heads)
        if arch == "llama" and target.endswith("attn_k.weight"):
            values = permute_rows(values, shape[0], shape[1], kv)
        if target.endswith("ffn_gate_inp_shexp.weight"):
            shape = shape[1:]  # [1, hidden] written as [hidden]
        out.append((target, shape, values))
    hp = {"context_length": config["max_position_embeddings"],
          "embedding_length": config["hidden_size"],
          "block_count": config["num_hidden_layers"],
          "feed_forward_length": config["intermediate_size"],
          "attention.head_count": heads, "attention.head_count_kv": kv,
          "attention.layer_norm_rms_epsilon": config["rms_norm_eps"],
          "rope.freq_base": config.get("rope_theta", 10000.0)}
    if experts:
        hp["expert_count"] = experts
        hp["expert_used_count"] = config["num_experts_per_tok"]
    if "moe_intermediate_size" in config:
        hp["expert_feed_forward_length"] = config["moe_intermediate_size"]
    if config.get("shared_expert_intermediate_size"):
        hp["expert_shared_feed_forward_length"] = \
            config["shared_expert_intermediate_size"]
    # Gemma 2's soft-caps and window, Gemma 3's window and global RoPE
    # scaling, as llama.cpp's converter writes them.
    for key, target in (("attn_logit_softcapping", "attn_logit_softcapping"),
                        ("final_logit_softcapping", "final_logit_softcapping"),
                        ("sliding_window", "attention.sliding_window")):
        if arch in ("gemma2", "gemma3") and config.get(key) is not None:
            hp[target] = config[key]
    scaling = config.get("rope_scaling") or {}
    if arch == "phi3":
        # llama.cpp's Phi3MiniModel: the window (0: none), the rotary
        # dimensions, and LongRoPE's factors as tensors beside its
        # original context and the magnitude of cos and sin.
        hp["attention.sliding_window"] = config.get("sliding_window") or 0
        hp["rope.dimension_count"] = config["hidden_size"] // heads
        original = config["original_max_position_embeddings"]
        hp["rope.scaling.original_context_length"] = original
        if scaling.get("type") in ("longrope", "su"):
            ratio = config["max_position_embeddings"] / original
            hp["rope.scaling.attn_factor"] = math.sqrt(
                1 + math.log(ratio) / math.log(original)) if ratio > 1 else 1.0
            for kind in ("long", "short"):
                factors = scaling[f"{kind}_factor"]
                out.append((f"rope_factors_{kind}.weight", [len(factors)],
                            [float(f) for f in factors]))
    if arch == "gemma3" and scaling.get("rope_type") == "linear":
        hp["rope.scaling.type"] = "linear"
        hp["rope.scaling.factor"] = scaling["factor"]
    if "head_dim" in config:
        hp["attention.key_length"] = hp["attention.value_length"] = \
            config["head_dim"]
    if arch == "deepseek2":
        hp.update(deepseek2_metadata(config))
    if arch == "glm4moe":
        hp.update(glm4moe_metadata(config))
    return hp, out


def random_model(spec, seed):
    """A LLaMA of `spec` = dim,layers,heads,kv_heads,ffn,vocab[,experts,used]
    with weights from a fixed generator (an LCG, so that every Python draws
    the same); with experts, Mixtral's layout: a router (ffn_gate_inp) and
    `experts` MLPs of ffn stacked in ffn_{gate,up,down}_exps, `used` a
    token."""
    sizes = [int(x) for x in spec.split(",")]
    dim, layers, heads, kv, ffn, vocab = sizes[:6]
    experts, used = (sizes[6:8] + [0, 0])[:2]
    state = [seed * 2654435761 % 2**32 or 1]

    def draw(count, scale):
        values = []
        for _ in range(count):
            state[0] = (state[0] * 1664525 + 1013904223) % 2**32
            values.append((state[0] / 2**32 - 0.5) * 2 * scale)
        return values

    kv_dim = dim // heads * kv
    out = [("token_embd.weight", [vocab, dim], draw(vocab * dim, 1.0))]
    for l in range(layers):
        out += [(f"blk.{l}.attn_norm.weight", [dim],
                 [1 + v for v in draw(dim, 0.1)]),
                (f"blk.{l}.attn_q.weight", [dim, dim], draw(dim * dim, 0.1)),
                (f"blk.{l}.attn_k.weight", [kv_dim, dim], draw(kv_dim * dim, 0.1)),
                (f"blk.{l}.attn_v.weight", [kv_dim, dim], draw(kv_dim * dim, 0.1)),
                (f"blk.{l}.attn_output.weight", [dim, dim], draw(dim * dim, 0.1)),
                (f"blk.{l}.ffn_norm.weight", [dim],
                 [1 + v for v in draw(dim, 0.1)])]
        if experts:
            n = experts
            out += [(f"blk.{l}.ffn_gate_inp.weight", [n, dim],
                     draw(n * dim, 0.5)),
                    (f"blk.{l}.ffn_gate_exps.weight", [n, ffn, dim],
                     draw(n * ffn * dim, 0.1)),
                    (f"blk.{l}.ffn_up_exps.weight", [n, ffn, dim],
                     draw(n * ffn * dim, 0.1)),
                    (f"blk.{l}.ffn_down_exps.weight", [n, dim, ffn],
                     draw(n * dim * ffn, 0.1))]
            continue
        out += [(f"blk.{l}.ffn_gate.weight", [ffn, dim], draw(ffn * dim, 0.1)),
                (f"blk.{l}.ffn_up.weight", [ffn, dim], draw(ffn * dim, 0.1)),
                (f"blk.{l}.ffn_down.weight", [dim, ffn], draw(dim * ffn, 0.1))]
    out += [("output_norm.weight", [dim], [1 + v for v in draw(dim, 0.1)]),
            ("output.weight", [vocab, dim], draw(vocab * dim, 0.1))]
    hp = {"context_length": 64, "embedding_length": dim, "block_count": layers,
          "feed_forward_length": ffn, "attention.head_count": heads,
          "attention.head_count_kv": kv,
          "attention.layer_norm_rms_epsilon": 1e-5, "rope.freq_base": 10000.0}
    if experts:
        hp["expert_count"], hp["expert_used_count"] = experts, used
    return hp, out


# ------------------------------------------------------------ tokenizers


def sentencepiece_from_llama2c(path, vocab_size):
    """llama2.c's tokenizer.bin back in SentencePiece's spelling: "▁" for
    spaces, <s> and </s> for its "\\n<s>\\n" and "\\n</s>\\n"."""
    tokens, scores, types = [], [], []
    with open(path, "rb") as f:
        f.read(4)  # max token length
        for i in range(vocab_size):
            score, length = struct.unpack("<fi", f.read(8))
            piece = f.read(length).decode("utf-8")
            piece = piece.strip("\n") if i in (1, 2) else piece
            tokens.append(piece.replace(" ", "\u2581"))
            scores.append(score)
            types.append(2 if i == 0 else 3 if i in (1, 2) else
                         6 if re.fullmatch(r"<0x[0-9A-F]{2}>", piece) else 1)
    return {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.scores": scores, "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2}


def bert_from_files(directory):
    """BERT's vocab.txt as llama.cpp's convert_hf_to_gguf.py writes it: the
    "phantom space" spelling (a word's first piece "▁piece", a continuation
    "##piece" as "piece", [SPECIAL] tokens as written), the named special
    tokens control (3)."""
    with open(os.path.join(directory, "vocab.txt"), encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]

    def phantom(token):
        if token.startswith("[") and token.endswith("]"):
            return token
        return token[2:] if token.startswith("##") else "\u2581" + token
    named = {"[PAD]": "padding", "[UNK]": "unknown", "[CLS]": "cls",
             "[SEP]": "seperator", "[MASK]": "mask"}
    metadata = {"tokenizer.ggml.model": "bert",
                "tokenizer.ggml.tokens": [phantom(t) for t in vocab],
                "tokenizer.ggml.token_type": [3 if t in named else 1 for t in vocab]}
    for token, key in named.items():
        if token in vocab:
            metadata[f"tokenizer.ggml.{key}_token_id"] = vocab.index(token)
    return metadata


def gpt2_from_files(directory, added=(), control=()):
    with open(os.path.join(directory, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(directory, "merges.txt"), encoding="utf-8") as f:
        merges = [line.rstrip("\n") for line in f
                  if line.strip() and not line.startswith("#version")]
    tokens = [None] * len(vocab)
    for piece, i in vocab.items():
        tokens[i] = piece
    types = [3 if t.startswith("<|") and t.endswith("|>") else 1 for t in tokens]
    # Added tokens as llama.cpp's converter stores them: as written (not in
    # the byte-level spelling), user-defined (4).
    tokens += list(added)
    types += [4] * len(added)
    # Control tokens (3), as Mistral's [TOOL_CALLS]: special, not text.
    tokens += list(control)
    types += [3] * len(control)
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2",
            "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.merges": merges}


def gemma4_from_files(directory):
    """Gemma 4's tokenizer.json as llama.cpp's converter writes it
    (conversion/gemma.py, Gemma4Model.set_vocab): model "gemma4", tokens
    in their SentencePiece spelling, the added tokens control (3) except
    those it keeps visible for its chat parser (user-defined, 4), "<0xAB>"
    byte tokens (6), the merges as "a b", and BOS always added."""
    with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
        spec = json.load(f)
    model = spec["model"]
    tokens = [None] * len(model["vocab"])
    for piece, i in model["vocab"].items():
        tokens[i] = piece
    visible = {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>",
               "<|tool_response>", "<tool_response|>", "<|\"|>"}
    added = {t["id"]: t["content"] for t in spec["added_tokens"]}
    types = [(4 if t in visible else 3) if i in added else
             6 if re.fullmatch(r"<0x[0-9A-F]{2}>", t) else 1
             for i, t in enumerate(tokens)]
    ids = {t: i for i, t in enumerate(tokens)}
    return {"tokenizer.ggml.model": "gemma4", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.scores": [-1000.0] * len(tokens),
            "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.merges": [" ".join(m) for m in model["merges"]],
            "tokenizer.ggml.bos_token_id": ids["<bos>"],
            "tokenizer.ggml.eos_token_id": ids["<eos>"],
            "tokenizer.ggml.unknown_token_id": ids["<unk>"],
            "tokenizer.ggml.padding_token_id": ids["<pad>"],
            "tokenizer.ggml.add_space_prefix": False,
            "tokenizer.ggml.add_bos_token": True}


# ------------------------------------------------------------ container


def gguf_string(s):
    data = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(data)) + data


def gguf_value(value, in_array=False):
    """(type, bytes) of a metadata value: bool, int (u32, or i32 in arrays,
    as llama.cpp wants token types; i64 past those), float (f32), str, or a
    list of one of those."""
    if isinstance(value, bool):  # before int, which bool is
        return 7, struct.pack("<?", value)
    if isinstance(value, int) and in_array and -2**31 <= value < 2**31:
        return 5, struct.pack("<i", value)
    if isinstance(value, int):
        return (4, struct.pack("<I", value)) if 0 <= value < 2**32 \
            else (11, struct.pack("<q", value))
    if isinstance(value, float):
        return 6, struct.pack("<f", value)
    if isinstance(value, str):
        return 8, gguf_string(value)
    if not value:  # an empty array, of strings (merges of no merge)
        return 9, struct.pack("<IQ", 8, 0)
    element_type, _ = gguf_value(value[0], True)
    body = b"".join(gguf_value(v, True)[1] for v in value)
    return 9, struct.pack("<IQ", element_type, len(value)) + body


BREAKAGES = {
    "iq2": "the second tensor claims GGML type IQ2_XXS",
    "no-type": "the second tensor claims GGML type 2^32 - 1, which tfmc's "
               "own q8_channel carries as its no-GGML-type mark",
    "past-end": "the last tensor's offset lies past the end of the data",
    "misaligned": "the second tensor's offset is not a multiple of 32",
    "overlap": "the second tensor starts inside the first",
    "duplicate": "the second tensor has the first one's name",
    "huge-dim": "the second tensor's dims multiply past 2^64",
}


def write(path, metadata, tensors, breakage=None):
    kv = b""
    for key, value in metadata.items():
        value_type, body = gguf_value(value)
        kv += gguf_string(key) + struct.pack("<I", value_type) + body
    infos, blobs, offset = b"", [], 0
    for index, (name, shape, ggml_type, data) in enumerate(tensors):
        dims = list(reversed(shape))
        second, last = index == 1, index == len(tensors) - 1
        at = offset
        if second and breakage == "duplicate":
            name = tensors[0][0]
        if second and breakage == "huge-dim":
            dims = [2**40, 2**40]
        if second and breakage == "iq2":
            ggml_type = "IQ2_XXS"
        if second and breakage == "misaligned":
            at += 4
        if second and breakage == "overlap":
            at = 0
        if last and breakage == "past-end":
            at += 1 << 20
        infos += gguf_string(name) + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", d) for d in dims)
        type_number = GGML_TYPES[ggml_type]
        if second and breakage == "no-type":
            type_number = 0xFFFFFFFF
        infos += struct.pack("<IQ", type_number, at)
        padded = data + b"\0" * (-len(data) % ALIGNMENT)
        blobs.append(padded)
        offset += len(padded)
    header = struct.pack("<IIQQ", 0x46554747, 3, len(tensors), len(metadata))
    body = header + kv + infos
    body += b"\0" * (-len(body) % ALIGNMENT)
    with open(path, "wb") as f:
        f.write(body + b"".join(blobs))


def apply_settings(metadata, settings):
    """--set KEY=JSON: adds or replaces a key (JSON null removes it)."""
    for setting in settings:
        key, value = setting.split("=", 1)
        if value == "null":
            metadata.pop(key, None)
        else:
            metadata[key] = json.loads(value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--hf", metavar="DIR")
    source.add_argument("--random", metavar="DIM,LAYERS,HEADS,KV,FFN,VOCAB")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--type", default="F32",
                        choices=[t for t in GGML_TYPES if t != "MXFP4"])
    parser.add_argument("--edge-type", help="token_embd and output (default "
                        "--type)")
    parser.add_argument("--type-for", action="append", default=[],
                        metavar="PART=TYPE", help="tensors whose names "
                        "contain PART (attn_v: llama.cpp's Q4_K_M keeps "
                        "some in Q6_K) in TYPE")
    parser.add_argument("--sp-tokenizer", metavar="TOKENIZER_BIN")
    parser.add_argument("--gpt2-tokenizer", metavar="DIR")
    parser.add_argument("--gemma4-tokenizer", metavar="DIR",
                        help="a Gemma 4 tokenizer.json, as llama.cpp's "
                        "converter writes it")
    parser.add_argument("--bert-tokenizer", metavar="DIR",
                        help="BERT's vocab.txt in DIR, as llama.cpp writes it")
    parser.add_argument("--added-token", action="append", default=[],
                        metavar="TEXT", help="append a user-defined token "
                        "to --gpt2-tokenizer's (\\n, \\t and \\s, a space, "
                        "unescaped)")
    parser.add_argument("--control-token", action="append", default=[],
                        metavar="TEXT", help="append a control (special) "
                        "token to --gpt2-tokenizer's, after the added ones")
    parser.add_argument("--arch", default="llama")
    parser.add_argument("--set", action="append", default=[],
                        metavar="KEY=JSON", help="add or replace metadata "
                        "(JSON null removes the key)")
    parser.add_argument("--break", dest="breakage", choices=list(BREAKAGES),
                        help="write a malformed file: " + "; ".join(
                            f"{k}: {v}" for k, v in BREAKAGES.items()))
    args = parser.parse_args()

    hp, weights = read_hf(args.hf, args.arch) if args.hf else \
        random_model(args.random, args.seed)
    vocab_size = next(s[0] for n, s, _ in weights if n == "token_embd.weight")
    metadata = {"general.architecture": args.arch,
                "general.alignment": ALIGNMENT}
    metadata.update({f"{args.arch}.{k}": v for k, v in hp.items()})
    if args.sp_tokenizer:
        metadata.update(sentencepiece_from_llama2c(args.sp_tokenizer,
                                                   vocab_size))
    if args.gpt2_tokenizer:
        added = [t.replace("\\s", " ").replace("\\t", "\t").replace("\\n", "\n")
                 for t in args.added_token]
        metadata.update(gpt2_from_files(args.gpt2_tokenizer, added,
                                        args.control_token))
    if args.bert_tokenizer:
        metadata.update(bert_from_files(args.bert_tokenizer))
    if args.gemma4_tokenizer:
        metadata.update(gemma4_from_files(args.gemma4_tokenizer))
    apply_settings(metadata, args.set)

    tensors = []
    for name, shape, values in weights:
        if isinstance(values, Encoded):  # blocks copied from the checkpoint
            tensors.append((name, shape, values.ggml_type, values.data))
            continue
        edge = name in ("token_embd.weight", "output.weight")
        wanted = (args.edge_type or args.type) if edge else args.type
        for rule in args.type_for:
            part, ggml_type = rule.split("=")
            if part in name:
                wanted = ggml_type
        if len(shape) == 1:
            wanted = "F32"
        elif shape[-1] % BLOCK_ELEMENTS[wanted]:
            wanted = "F16"
        tensors.append((name, shape, wanted, encode(values, wanted)))
    write(args.out, metadata, tensors, args.breakage)


if __name__ == "__main__":
    main()
