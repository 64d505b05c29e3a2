#!/usr/bin/env python3
"""Writes the Gemma 4 fixtures (test/e2e/families/Inputs/) and their goldens
(<fixture>.logits.bin: little-endian f32 [12, vocab], the logits of every
position of TOKENS). transformers 4.40 has no Gemma 4, so the goldens come
from the NumPy transcription of transformers' gemma4 modeling code
(reference/gemma4.py), in float64 from the bf16 values tfmc reads, the
embeddings scaled by the exact sqrt(hidden) (as llama.cpp does;
transformers rounds it to the weights' dtype first).

  gemma4-e2b/  model_type gemma4 (the image-text folder E2B and E4B ship):
               text_config with E2B's features at toy sizes (per-layer
               inputs, the last 4 of 8 layers reading layers 2 and 3's keys
               and values with MLPs twice as wide, one KV head, sliding
               heads of 8 and full ones of 16 with proportional RoPE),
               tensors under model.language_model., a vision and an audio
               tower beside them, and the shared layers' unused k_proj,
               v_proj and k_norm, as published checkpoints keep them.
  gemma4-31b/  model_type gemma4_text: 31B's features (attention_k_eq_v:
               full layers without v_proj and with fewer KV heads), no
               per-layer inputs, no sharing.
  gemma4-a4b/  model_type gemma4: 26B-A4B's features, 31B's attention and
               in every layer a dense MLP beside 4 experts (2 a token),
               their router on the residual (router.scale,
               per_expert_scale), the experts stacked as published
               (experts.gate_up_proj, experts.down_proj).

    /usr/bin/python3 test/e2e/make_gemma4_goldens.py [FIXTURE...]

needs NumPy, nothing else (reference/checkpoint.py writes the safetensors).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import gemma4  # noqa: E402
from make_gpt_oss_goldens import OUT, TOKENS, write_fixture  # noqa: E402


def text_config(cfg):
    """A reference config as Gemma4TextConfig writes it."""
    c = dict(cfg)
    c.update(model_type="gemma4_text", architectures=["Gemma4ForCausalLM"],
             hidden_activation="gelu_pytorch_tanh", max_position_embeddings=256,
             tie_word_embeddings=True, bos_token_id=2, eos_token_id=[1, 50],
             pad_token_id=0, attention_bias=False)
    return c


def unused_tensors(cfg, weights, rng):
    """What a published E2B folder holds beside the text model: towers
    tfmc reads past, and each shared layer's own K and V weights, which
    transformers drops on load."""
    extra = {"model.vision_tower.encoder.layers.0.mlp.up_proj.weight": rng.standard_normal((4, 4)),
             "model.embed_vision.embedding_projection.weight": rng.standard_normal((4, 4)),
             "model.audio_tower.layers.0.ffw_layer_start.ffw_layer_1.weight": rng.standard_normal((4, 4)),
             "model.embed_audio.embedding_projection.weight": rng.standard_normal((4, 4))}
    for l in range(cfg["num_hidden_layers"]):
        g = gemma4.geometry(cfg, l)
        if g["src"] is not None:
            p = "model.layers.%d.self_attn." % l
            extra[p + "k_proj.weight"] = rng.standard_normal((g["kv_heads"] * g["head_dim"], cfg["hidden_size"]))
            extra[p + "v_proj.weight"] = rng.standard_normal((g["kv_heads"] * g["head_dim"], cfg["hidden_size"]))
            extra[p + "k_norm.weight"] = rng.standard_normal(g["head_dim"])
    return extra


def write(name, cfg, config_json, rng, prefix="model.", extra=False):
    weights = gemma4.random_weights(cfg, rng)
    stored_weights = dict(weights)
    if extra:
        stored_weights.update(unused_tensors(cfg, weights, rng))
    renamed = {(prefix + k[len("model."):] if k.startswith("model.") and not
                k.startswith(("model.vision_tower", "model.embed_vision", "model.audio_tower",
                              "model.embed_audio")) else k): v
               for k, v in stored_weights.items()}
    stored = write_fixture(name, config_json, renamed)
    read = {("model." + k[len(prefix):] if k.startswith(prefix) else k): v for k, v in stored.items()}
    logits = gemma4.forward(TOKENS, read, cfg)
    logits.astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    # The cached form (rings for the sliding layers), prefill of 3 and
    # decodes, agrees with the forward pass: what tfm-kv-cache must match.
    cache = {"ring": True}
    steps = [gemma4.forward(TOKENS[:3], read, cfg, cache, 0)]
    for i in range(3, len(TOKENS)):
        steps.append(gemma4.forward(TOKENS[i:i + 1], read, cfg, cache, i))
    cached = np.concatenate(steps)
    print(f"{name}: logits {logits.shape}, max |logit| {np.abs(logits).max():.2f}, "
          f"cached form off by {np.abs(cached - logits).max():.1e}")


def image_text_config(cfg):
    """The outer config of an image-text folder (E2B, E4B, 26B-A4B)."""
    return {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"],
            "text_config": text_config(cfg), "tie_word_embeddings": True,
            "vision_config": {"model_type": "gemma4_vision", "hidden_size": 4},
            "audio_config": {"model_type": "gemma4_audio", "hidden_size": 4},
            "image_token_id": 60, "boi_token_id": 61, "eoi_token_id": 62}


def main():
    chosen = set(sys.argv[1:])
    if not chosen or "gemma4-e2b" in chosen:
        cfg = gemma4.e2b_like()
        write("gemma4-e2b", cfg, image_text_config(cfg), np.random.default_rng(51),
              prefix="model.language_model.", extra=True)
    if not chosen or "gemma4-31b" in chosen:
        cfg = gemma4.dense31b_like()
        write("gemma4-31b", cfg, text_config(cfg), np.random.default_rng(52))
    if not chosen or "gemma4-a4b" in chosen:
        cfg = gemma4.a4b_like()
        write("gemma4-a4b", cfg, image_text_config(cfg), np.random.default_rng(53),
              prefix="model.language_model.")


if __name__ == "__main__":
    main()
