#!/usr/bin/env python3
"""Writes the fixtures of the Gated DeltaNet hybrids, Qwen3.5 and Qwen3-Next
(test/e2e/families/Inputs/<name>/: config.json + model.safetensors, small
random weights in transformers' layout), and their goldens
(<name>.logits.bin: little-endian f32 [12, vocab], the logits of every
position of TOKENS). transformers 4.40 has none of these models, so the
goldens come from the NumPy transcription of transformers' qwen3_next and
qwen3_5 modeling code (reference/qwen3_next.py, whose self-tests check the
chunked delta rule against the recurrent one, the carried states and the
GGUF conversion), in float64.

    /usr/bin/python3 test/e2e/make_qwen_hybrid_goldens.py [qwen3_5 ...]

needs NumPy, nothing else (reference/checkpoint.py writes the safetensors).
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import qwen3_next as qn  # noqa: E402
from checkpoint import as_f32, write_safetensors  # noqa: E402

OUT = os.path.join(HERE, "families", "Inputs")
TOKENS = [1, 17, 42, 5, 63, 0, 28, 9, 33, 12, 50, 7]
VOCAB = 64


def write(name, config, text, seed, prefix, tied, extra=None, stacked=False):
    """`config` as published (`text` its text model's fields, which the
    reference reads), the layers' tensors under `prefix`; with `stacked`
    the experts as transformers 5 saves them."""
    rng = np.random.default_rng(seed)
    D = text["hidden_size"]
    tensors = {prefix + "embed_tokens.weight": rng.standard_normal((VOCAB, D)),
               prefix + "norm.weight": 0.1 * rng.standard_normal(D)}
    if not tied:
        tensors["lm_head.weight"] = rng.standard_normal((VOCAB, D)) * 0.3
    for l, kind in enumerate(qn.layer_types(text)):
        for k, v in qn.random_layer(rng, text, kind).items():
            tensors[prefix + "layers.%d.%s" % (l, k)] = v
    tensors.update(extra or {})
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    stored = {k: np.asarray(v, dtype=np.float32) for k, v in tensors.items()}
    saved = qn.stacked_experts(stored, prefix, text["num_hidden_layers"],
                            text["num_experts"]) if stacked else stored
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      {k: as_f32(v) for k, v in saved.items()})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    # The golden from the float32 weights tfmc reads.
    logits = qn.forward(TOKENS, {k: v.astype(np.float64)
                                 for k, v in stored.items()}, text, prefix)
    logits.astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {logits.shape}, max |logit| {np.abs(logits).max():.2f}")


TEXT = dict(vocab_size=VOCAB, max_position_embeddings=256, bos_token_id=1,
            eos_token_id=2, hidden_act="silu")


def qwen3_5():
    """Qwen3.5's dense layout as its image-text folders publish it
    (Qwen3_5ForConditionalGeneration): the text model's fields in
    text_config with RoPE in rope_parameters (multimodal sections, plain
    RoPE for text), its tensors under model.language_model., a tied head,
    three Gated DeltaNet layers then one of gated attention (layer_types),
    2 key heads and 4 value heads of 8 (each key head read by two);
    a vision tower's and a multi-token prediction block's tensors read
    past."""
    text = dict(qn.small_config("qwen3_5"), **TEXT, model_type="qwen3_5_text")
    text["linear_value_head_dim"] = 8  # llama.cpp wants dk = dv
    text["layer_types"] = qn.layer_types(text)
    del text["full_attention_interval"]
    rope = dict(rope_type="default", rope_theta=text.pop("rope_theta"),
                partial_rotary_factor=text.pop("partial_rotary_factor"),
                mrope_section=[1, 1, 0], mrope_interleaved=True)
    published = dict(text, rope_parameters=rope)
    config = dict(model_type="qwen3_5", tie_word_embeddings=True,
                  architectures=["Qwen3_5ForConditionalGeneration"],
                  text_config=published,
                  vision_config=dict(model_type="qwen3_5", depth=1))
    rng = np.random.default_rng(7)
    extra = {"model.visual.patch_embed.proj.weight": rng.standard_normal((8, 3)),
             "mtp.fc.weight": rng.standard_normal((48, 96))}
    text.update(rope_theta=rope["rope_theta"], partial_rotary_factor=0.25)
    write("qwen3-5", config, text, 41, "model.language_model.", True, extra)


def qwen3_next():
    """Qwen3-Next's layout: each key head's q, k, v and z in one projection
    (in_proj_qkvz) and its b and a in another (in_proj_ba), one full
    attention layer in full_attention_interval 4; 4 experts, top 2
    renormalized, and a shared expert gated by a sigmoid."""
    text = dict(qn.small_config("qwen3_next", experts=4), **TEXT,
                tie_word_embeddings=False,
                architectures=["Qwen3NextForCausalLM"])
    text["linear_value_head_dim"] = 8  # llama.cpp wants dk = dv
    write("qwen3-next", text, text, 42, "model.", False)


def qwen3_5_moe():
    """Qwen3.5's mixture of experts as a text model's own folder
    (qwen3_5_moe_text): separate projections, 4 experts top 2 (always
    renormalized), a gated shared expert, and no dense MLP width; value
    heads of 12 beside key heads of 8, which llama.cpp does not take; the
    experts stacked as transformers 5 saves them."""
    text = dict(qn.small_config("qwen3_5_moe", experts=4), **TEXT,
                model_type="qwen3_5_moe_text", tie_word_embeddings=False,
                architectures=["Qwen3_5MoeForCausalLM"])
    del text["intermediate_size"]
    del text["norm_topk_prob"]
    write("qwen3-5-moe", text, text, 43, "model.", False, stacked=True)


if __name__ == "__main__":
    for fixture in sys.argv[1:] or ["qwen3_5", "qwen3_next", "qwen3_5_moe"]:
        globals()[fixture]()
