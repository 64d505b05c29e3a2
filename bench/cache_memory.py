#!/usr/bin/env python3
"""bench/cache_memory.py: what a sequence costs in cache memory, as tfmc lays
its caches out, for the published sizes of the 2026 decoders: KV bytes per
token (the layers that keep every position), bytes per sequence that do not
grow with it (sliding layers' rings of `window` positions, Gated DeltaNet
states), in f32 (tfmc's default) and bf16 (--kv-dtype=bf16: KV rows only;
rings are KV rows too; recurrent states stay f32).

    /usr/bin/python3 bench/cache_memory.py

The configs below name where each field was read (docs/plans/*.md have the
sources): V verified in a config class or llama.cpp's size switch, C a
third-party copy of config.json, R recalled. The fixtures' --stats
(families/qwen3-5.test, gpt-oss.test, deepseek-v3.test) check the same
arithmetic on the models tfmc compiles.
"""

KIB, MIB = 1024.0, 1024.0 ** 2

MODELS = {
    # llama.cpp qwen35.cpp:27 (32 layers: 9B, hidden not 2560) V; one
    # layer in four attends (full_attention_interval 4) V; the widths as
    # Qwen3.5-35B-A3B's (docs/plans/deltanet.md) R.
    "Qwen3.5-9B": dict(layers=32, attention_every=4, kv_heads=4, head_dim=256,
                       key_heads=16, value_heads=32, key_dim=128,
                       value_dim=128, conv=4),
    # gpt-oss-20b config.json (docs/plans/gpt-oss-gemma4.md §1) V: 24
    # layers alternating sliding (128) and full, 8 KV heads of 64.
    "gpt-oss-20b": dict(layers=24, sliding_every=2, window=128, kv_heads=8,
                        head_dim=64),
    # Gemma-4-E2B text_config (§1) V: 35 layers, 4 sliding (512, 1 KV head
    # of 256) to 1 full (1 KV head of 512); the last 20 layers read the KV
    # of the last earlier layer of their kind (num_kv_shared_layers), so 15
    # layers store rows. tfmc does not compile Gemma 4 yet: arithmetic
    # only.
    "Gemma-4-E2B": dict(layers=35, shared_layers=20, sliding_pattern=5,
                        window=512, kv_heads=1, head_dim=256,
                        global_head_dim=512),
    # DeepSeek-V3 config.json (docs/plans/mla.md) V: 61 layers, one latent
    # row of kv_lora_rank 512 + qk_rope_head_dim 64 a position and layer.
    "DeepSeek-V3": dict(layers=61, latent=512 + 64),
}


def qwen35(m, element):
    attention = m["layers"] // m["attention_every"]
    recurrent = m["layers"] - attention
    per_token = attention * 2 * m["kv_heads"] * m["head_dim"] * element
    channels = (2 * m["key_heads"] * m["key_dim"] +
                m["value_heads"] * m["value_dim"])
    state = ((m["conv"] - 1) * channels +
             m["value_heads"] * m["key_dim"] * m["value_dim"]) * 4
    return per_token, recurrent * state, (
        f"{attention} attention layers; {recurrent} DeltaNet layers of "
        f"{state / MIB:.2f} MiB (f32 always)")


def gpt_oss(m, element):
    sliding = m["layers"] // m["sliding_every"]
    full = m["layers"] - sliding
    row = 2 * m["kv_heads"] * m["head_dim"] * element
    return full * row, sliding * m["window"] * row, (
        f"{full} full layers; {sliding} sliding layers' rings of "
        f"{m['window']} positions")


def gemma4(m, element):
    stored = m["layers"] - m["shared_layers"]
    full = stored // m["sliding_pattern"]
    sliding = stored - full
    per_token = full * 2 * m["kv_heads"] * m["global_head_dim"] * element
    rings = sliding * m["window"] * 2 * m["kv_heads"] * m["head_dim"] * element
    return per_token, rings, (
        f"{stored} of {m['layers']} layers store rows ({full} full, "
        f"{sliding} sliding); not compiled yet")


def deepseek(m, element):
    return m["layers"] * m["latent"] * element, 0, (
        f"one {m['latent']}-wide latent row a position and layer")


FORMULAS = {"Qwen3.5-9B": qwen35, "gpt-oss-20b": gpt_oss,
            "Gemma-4-E2B": gemma4, "DeepSeek-V3": deepseek}


def main():
    print("| model | KV per token f32 | bf16 | per sequence f32 | bf16 | "
          "32k-token sequence f32 | layout |")
    print("|---|---|---|---|---|---|---|")
    for name, config in MODELS.items():
        per_token, fixed, note = FORMULAS[name](config, 4)
        half_token, half_fixed, _ = FORMULAS[name](config, 2)
        if name == "Qwen3.5-9B":
            half_fixed = fixed  # the states stay f32
        total = per_token * 32768 + fixed
        print(f"| {name} | {per_token / KIB:.1f} KiB | {half_token / KIB:.1f} "
              f"KiB | {fixed / MIB:.2f} MiB | {half_fixed / MIB:.2f} MiB | "
              f"{total / MIB / 1024:.2f} GiB | {note} |")


if __name__ == "__main__":
    main()
