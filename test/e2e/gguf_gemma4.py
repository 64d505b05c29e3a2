"""llama.cpp's conversion of Gemma 4's text model (conversion/gemma.py
Gemma4Model at de3ff81, with Gemma3Model's and the base TextModel's
metadata) for write_gguf.py: GGUF architecture gemma4. Plain Python, as
write_gguf.py is.

What the converter writes:
  * norms as they are (Gemma4Model.norm_shift is 0: Gemma 4 scales by w);
  * the sliding layers' and the full layers' head sizes apart
    (attention.key_length is the full layers', key_length_swa the sliding
    ones'), rope.dimension_count likewise, rope.freq_base the full layers'
    base and rope.freq_base_swa the sliding ones';
  * attention.sliding_window_pattern, a bool a layer (true: sliding);
    attention.head_count_kv one a layer where the config names
    num_global_key_value_heads; feed_forward_length one a layer where
    use_double_wide_mlp (the shared layers' twice as wide);
  * attention.shared_kv_layers and embedding_length_per_layer_input;
  * rope_freqs.weight, the full layers' proportional RoPE as frequency
    factors: 1 for the pairs that turn, 1e30 for the others;
  * layer_scalar as blk.N.layer_output_scale.weight, the per-layer
    inputs' tensors as per_layer_token_embd, per_layer_model_proj,
    per_layer_proj_norm, blk.N.inp_gate, blk.N.proj, blk.N.post_norm;
  * 26B-A4B's experts as they are: experts.gate_up_proj whole as
    ffn_gate_up_exps ([E, 2I, hidden]), router.scale as
    ffn_gate_inp.scale and per_expert_scale as ffn_down_exps.scale (the
    graph applies hidden^-1/2), the branch norms as pre_ffw_norm_2,
    post_ffw_norm_1 and post_ffw_norm_2; expert_count, expert_used_count
    and expert_feed_forward_length.
The towers of an image-text folder are not the text model's; the shared
layers' own K and V weights, which llama.cpp's loader would refuse as
unused, are left out.
"""

ARCHES = ("gemma4",)

LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "per_layer_input_gate.weight": "inp_gate.weight",
    "per_layer_projection.weight": "proj.weight",
    "post_per_layer_input_norm.weight": "post_norm.weight",
    "layer_scalar": "layer_output_scale.weight",
    "router.proj.weight": "ffn_gate_inp.weight",
    "router.scale": "ffn_gate_inp.scale",
    "router.per_expert_scale": "ffn_down_exps.scale",
    "experts.gate_up_proj": "ffn_gate_up_exps.weight",
    "experts.down_proj": "ffn_down_exps.weight",
    "pre_feedforward_layernorm_2.weight": "pre_ffw_norm_2.weight",
    "post_feedforward_layernorm_1.weight": "post_ffw_norm_1.weight",
    "post_feedforward_layernorm_2.weight": "post_ffw_norm_2.weight",
}
MODEL_NAMES = {
    "embed_tokens.weight": "token_embd.weight",
    "norm.weight": "output_norm.weight",
    "embed_tokens_per_layer.weight": "per_layer_token_embd.weight",
    "per_layer_model_projection.weight": "per_layer_model_proj.weight",
    "per_layer_projection_norm.weight": "per_layer_proj_norm.weight",
}


def convert(config, tensors, arch):
    """(metadata without the arch prefix, [(name, shape, values)])."""
    text = config.get("text_config", config)
    layers = text["num_hidden_layers"]
    types = text["layer_types"]
    sliding = [t == "sliding_attention" for t in types]
    shared = text.get("num_kv_shared_layers", 0)
    first_shared = layers - shared
    out = []
    for name, (shape, values) in tensors.items():
        for prefix in ("model.language_model.", "model."):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        if name in MODEL_NAMES:
            out.append((MODEL_NAMES[name], shape, values))
            continue
        if not name.startswith("layers."):
            continue  # the vision and audio towers
        layer, part = name[len("layers."):].split(".", 1)
        if int(layer) >= first_shared and part.startswith(
                ("self_attn.k_", "self_attn.v_")):
            continue
        out.append((f"blk.{layer}." + LAYER_NAMES[part], shape, values))
    full_dim, swa_dim = text["global_head_dim"], text["head_dim"]
    rope = text["rope_parameters"]
    turning = int(full_dim * rope["full_attention"]["partial_rotary_factor"] / 2)
    out.append(("rope_freqs.weight", [full_dim // 2],
                [1.0] * turning + [1e30] * (full_dim // 2 - turning)))
    ffn = text["intermediate_size"]
    hp = {"context_length": text["max_position_embeddings"],
          "embedding_length": text["hidden_size"],
          "block_count": layers,
          "feed_forward_length": [ffn * 2 if l >= first_shared else ffn
                                  for l in range(layers)]
          if text.get("use_double_wide_mlp") else ffn,
          "attention.head_count": text["num_attention_heads"],
          "attention.head_count_kv": text["num_key_value_heads"],
          "attention.layer_norm_rms_epsilon": text["rms_norm_eps"],
          "attention.key_length": full_dim,
          "attention.value_length": full_dim,
          "attention.key_length_swa": swa_dim,
          "attention.value_length_swa": swa_dim,
          "attention.sliding_window": text["sliding_window"],
          "attention.sliding_window_pattern": sliding,
          "attention.shared_kv_layers": shared,
          "embedding_length_per_layer_input":
              text.get("hidden_size_per_layer_input") or 0,
          "rope.freq_base": float(rope["full_attention"]["rope_theta"]),
          "rope.freq_base_swa": float(rope["sliding_attention"]["rope_theta"]),
          "rope.dimension_count": full_dim,
          "rope.dimension_count_swa": swa_dim}
    if text.get("enable_moe_block"):
        hp["expert_count"] = text["num_experts"]
        hp["expert_used_count"] = text["top_k_experts"]
        hp["expert_feed_forward_length"] = text["moe_intermediate_size"]
    if text.get("final_logit_softcapping"):
        hp["final_logit_softcapping"] = float(text["final_logit_softcapping"])
    if text.get("num_global_key_value_heads") is not None:
        hp["attention.head_count_kv"] = [
            text["num_key_value_heads"] if s else text["num_global_key_value_heads"]
            for s in sliding]
    return hp, out
