#!/usr/bin/env python3
"""Writes the decoder-family fixtures (test/e2e/families/Inputs/<name>/:
config.json + model.safetensors, tiny random weights) and their goldens
(<name>.logits.bin: little-endian f32 [12, vocab], the logits of every
position of TOKENS) with the Hugging Face transformers 4.40 model classes
(../shared/reference), GPT-Neo's with four layers of alternating global
and local attention. Llama 3's rope scaling postdates 4.40: its golden
runs LlamaForCausalLM with the rotary inverse frequencies replaced by ones
computed here by hand from the published formula; Qwen3's (added in 4.51)
runs 4.40's Llama with its per-head Q and K norms added (qwen3()).
Regenerate all, or the fixtures named, with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/make_family_goldens.py [qwen3 ...]
"""
import json
import math
import os

import sys

import safetensors.torch
import torch
import transformers as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "reference"))
from common import yarn_parameters  # noqa: E402  transformers v5's YaRN

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "families", "Inputs")
TOKENS = [1, 17, 42, 5, 63, 0, 28, 9, 33, 12, 50, 7]
SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=48,
             num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=32, bos_token_id=1, eos_token_id=2)


def randomize(model, seed):
    """Weights large enough that logits are far from flat; norm scales
    around 1 and every bias non-zero, so that each is exercised."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            is_norm_scale = ("norm" in name or "layernorm" in name) and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if is_norm_scale else 0.2 * noise)


def llama3_inverse_frequencies(theta, dim, factor, low, high, original):
    """Llama 3's banded rope scaling (Meta's reference, transformers >= 4.43
    _compute_llama3_parameters), by hand."""
    inverse = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    low_wave, high_wave = original / low, original / high
    out = []
    for f in inverse.tolist():
        wave = 2 * math.pi / f
        if wave > low_wave:
            f = f / factor
        elif wave >= high_wave:
            smooth = (original / wave - low) / (high - low)
            f = (1 - smooth) * f / factor + smooth * f
        out.append(f)
    return torch.tensor(out, dtype=torch.float32)


def use_yarn(model, scaling):
    """4.40's LlamaForCausalLM with YaRN's rotary embedding: the inverse
    frequencies replaced (reference/common.py's transcription of v5's
    _compute_yarn_parameters, in float64 then stored as float32, as tfmc
    does), and cos and sin multiplied by the attention factor, as
    transformers' RotaryEmbedding does (attention_scaling)."""
    config = model.config
    dim = config.hidden_size // config.num_attention_heads
    inverse, attention_factor = yarn_parameters(
        config.rope_theta, dim, scaling, config.max_position_embeddings)
    for layer in model.model.layers:
        rotary = layer.self_attn.rotary_emb
        rotary.inv_freq.copy_(torch.from_numpy(inverse))
        forward = rotary.forward
        rotary.forward = (lambda forward: lambda x, positions: tuple(
            t * attention_factor for t in forward(x, positions)))(forward)
    return attention_factor


def yarn():
    """YaRN as Qwen3's long-context configs set it (the default rounding of
    the correction dimensions, the attention factor from the factor), and
    as gpt-oss's (truncate false, a factor of 32): over 4 rotary pairs,
    the original context of 64 puts the ramp across them."""
    for name, seed, scaling in (
            ("llama-rope-yarn", 14,
             {"rope_type": "yarn", "factor": 4.0,
              "original_max_position_embeddings": 64}),
            ("llama-rope-yarn-untruncated", 15,
             {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
              "beta_slow": 1.0, "truncate": False,
              "original_max_position_embeddings": 64})):
        model = build(tf.LlamaConfig, tf.LlamaForCausalLM, seed,
                      num_key_value_heads=2,
                      max_position_embeddings=int(64 * scaling["factor"]))
        factor = use_yarn(model, scaling)
        print(f"{name}: attention factor {factor:.6f}")
        write(name, model, config_patch={"rope_scaling": scaling})


def write(name, model, config_patch=None, config_drop=()):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    for extra in ("generation_config.json",):
        path = os.path.join(folder, extra)
        if os.path.exists(path):
            os.remove(path)
    if config_patch or config_drop:
        # The published config's fields, not those of the class that
        # stands in for it (config_drop: Mixtral's own).
        path = os.path.join(folder, "config.json")
        with open(path) as f:
            config = json.load(f)
        config.update(config_patch or {})
        for key in config_drop:
            config.pop(key, None)
        with open(path, "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
    with torch.no_grad():
        logits = model(torch.tensor([TOKENS])).logits[0].float()
    logits.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {tuple(logits.shape)}, max |logit| {logits.abs().max():.2f}")


def build(config_class, model_class, seed, **overrides):
    config = config_class(**{**SIZES, **overrides})
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_class(config).eval()
    randomize(model, seed)
    return model


def mistral_window_convention():
    """The sliding-window convention: tfmc follows Mistral's maintained
    reference (mistral-inference: xformers' make_local_attention(W) and a
    rolling cache of W slots), where query i sees keys i-W+1..i, W of them,
    as newer transformers releases do. transformers 4.40 lets it see W + 1.
    So tfmc's window-4 fixture (test/e2e/Inputs/mistral-window4) must equal
    4.40's MistralForCausalLM with sliding_window = 3."""
    fixture = os.path.join(HERE, "Inputs", "mistral-window4")
    config = tf.MistralConfig.from_pretrained(fixture)
    config.sliding_window = 3
    config._attn_implementation = "eager"
    model = tf.MistralForCausalLM.from_pretrained(fixture, config=config).eval()
    with torch.no_grad():
        logits = model(torch.tensor([TOKENS])).logits[0].float()
    path = os.path.join(OUT, "mistral-window4-hf440-window3.logits.bin")
    logits.numpy().astype("<f4").tofile(path)
    print(f"mistral window convention: {tuple(logits.shape)}")


LONG_TOKENS = [(7 * i + 3) % 64 for i in range(40)]


def dynamic_ntk_past_max_context():
    """Dynamic NTK past max_position_embeddings (32), 40 tokens: the logits
    of transformers' cached generation, one token a call (each position's
    keys rotated with the base of its own sequence length, kept in the
    cache: tfmc's convention), and of its uncached forward (every position
    with the 40-token base). Fresh models for each: 4.40 keeps the last
    scaled frequencies in the module."""
    fixture = os.path.join(OUT, "llama-rope-dynamic")
    ids = torch.tensor([LONG_TOKENS])

    def fresh():
        config = tf.LlamaConfig.from_pretrained(fixture)
        config._attn_implementation = "eager"
        return tf.LlamaForCausalLM.from_pretrained(fixture, config=config).eval()

    with torch.no_grad():
        model, past, rows = fresh(), None, []
        for i in range(len(LONG_TOKENS)):
            out = model(ids[:, i:i + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0, -1].float())
        cached = torch.stack(rows)
        forward = fresh()(ids).logits[0].float()
    for name, logits in (("cached40", cached), ("forward40", forward)):
        path = os.path.join(OUT, f"llama-rope-dynamic.{name}.logits.bin")
        logits.numpy().astype("<f4").tofile(path)
    print(f"dynamic NTK past the context: max |cached - forward| "
          f"{(cached - forward).abs().max():.4f}")


def gpt_neo():
    """GPT-Neo: four layers, global and local in turn, a window of 4
    positions (of the 12 tokens), unscaled attention scores."""
    config = tf.GPTNeoConfig(vocab_size=64, hidden_size=32, num_layers=4,
                             num_heads=4, intermediate_size=48,
                             max_position_embeddings=32, window_size=4,
                             attention_types=[[["global", "local"], 2]],
                             bos_token_id=1, eos_token_id=2)
    config._attn_implementation = "eager"
    torch.manual_seed(14)
    model = tf.GPTNeoForCausalLM(config).eval()
    randomize(model, 14)
    write("gpt-neo", model)


def phi3():
    """Phi-3 (added in transformers 4.41): LLaMA's computation with Q, K and
    V fused into qkv_proj ([Q rows; K rows; V rows]) and the MLP's gate and
    up into gate_up_proj ([gate rows; up rows], chunked in that order), as
    4.51's Phi3Attention and Phi3MLP split them, and a sliding window: run
    as 4.40's MistralForCausalLM, saved fused with Phi-3's config. tfmc's
    window of W positions (as mistral_window_convention says) is 4.40's
    W - 1: the golden model has sliding_window 4, the fixture's config 5."""
    model = build(tf.MistralConfig, tf.MistralForCausalLM, 22,
                  num_key_value_heads=2, sliding_window=4,
                  tie_word_embeddings=False)
    write("phi3", model, config_patch={
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
        "sliding_window": 5, "original_max_position_embeddings": 32,
        "rope_scaling": None, "attention_bias": False, "pad_token_id": 0})
    save_phi3_weights("phi3", model)


def save_phi3_weights(fixture, model):
    """`model`'s weights as Phi-3 stores them: Q, K and V fused into
    qkv_proj, the MLP's gate and up into gate_up_proj."""
    weights = model.state_dict()
    fused = {}
    for name, tensor in weights.items():
        for parts, into in ((("q_proj", "k_proj", "v_proj"), "qkv_proj"),
                            (("gate_proj", "up_proj"), "gate_up_proj")):
            if f".{parts[0]}." in name:
                fused[name.replace(parts[0], into)] = torch.cat(
                    [weights[name.replace(parts[0], p)] for p in parts])
        if not any(f".{p}." in name for p in ("q_proj", "k_proj", "v_proj",
                                               "gate_proj", "up_proj")):
            fused[name] = tensor.contiguous()
    safetensors.torch.save_file(
        fused, os.path.join(OUT, fixture, "model.safetensors"),
        metadata={"format": "pt"})


class LongRope440(torch.nn.Module):
    """transformers 4.41's Phi3LongRoPEScaledRotaryEmbedding for 4.40's
    Mistral attention, which asks for the cached keys plus the new ones
    (4.41's max position + 1): the short factors up to
    original_max_position_embeddings, the long ones past it, cos and sin
    multiplied by sqrt(1 + ln(s) / ln(original)), s = max_position_embeddings
    / original."""

    def __init__(self, dim, config):
        super().__init__()
        self.dim, self.base = dim, config.rope_theta
        self.short = config.rope_scaling["short_factor"]
        self.long = config.rope_scaling["long_factor"]
        self.original = config.original_max_position_embeddings
        scale = config.max_position_embeddings / self.original
        self.magnitude = 1.0 if scale <= 1 else math.sqrt(
            1 + math.log(scale) / math.log(self.original))

    def forward(self, x, seq_len=None):
        factors = torch.tensor(
            self.long if seq_len > self.original else self.short,
            dtype=torch.float32)
        shape = torch.arange(0, self.dim, 2, dtype=torch.int64).float() / self.dim
        inverse = 1.0 / (factors * self.base ** shape)
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos() * self.magnitude, angles.sin() * self.magnitude


class RowsOf(torch.nn.Module):
    """Rows [begin, end) of a fused projection, as a projection of their
    own (the fused one held beside it, not by this module)."""

    def __init__(self, fused, begin, end):
        super().__init__()
        self.__dict__["fused"] = fused
        self.begin, self.end = begin, end

    def forward(self, x):
        return torch.nn.functional.linear(
            x, self.__dict__["fused"].weight[self.begin:self.end])


class Phi3ForCausalLM440(tf.MistralForCausalLM):
    """transformers 4.41's Phi3ForCausalLM on 4.40's Mistral: Q, K and V one
    projection (qkv_proj, [Q rows; K rows; V rows]) and the MLP's gate and
    up one (gate_up_proj, [gate rows; up rows]), as Phi-3's weights are
    named, and LongRope440 where the config's rope_scaling is LongRoPE.
    Mistral's window is tfmc's minus one (mistral_window_convention): the
    config's sliding_window, where set, is lowered by one here."""

    def __init__(self, config):
        if getattr(config, "sliding_window", None):
            config.sliding_window -= 1
        super().__init__(config)
        d = config.hidden_size
        head_dim = d // config.num_attention_heads
        q = config.num_attention_heads * head_dim
        kv = config.num_key_value_heads * head_dim
        inner = config.intermediate_size
        scaling = getattr(config, "rope_scaling", None) or {}
        for layer in self.model.layers:
            attention, mlp = layer.self_attn, layer.mlp
            del attention.q_proj, attention.k_proj, attention.v_proj
            attention.qkv_proj = torch.nn.Linear(d, q + 2 * kv, bias=False)
            for name, begin, end in (("q_proj", 0, q), ("k_proj", q, q + kv),
                                     ("v_proj", q + kv, q + 2 * kv)):
                object.__setattr__(attention, name,
                                   RowsOf(attention.qkv_proj, begin, end))
            del mlp.gate_proj, mlp.up_proj
            mlp.gate_up_proj = torch.nn.Linear(d, 2 * inner, bias=False)
            object.__setattr__(mlp, "gate_proj",
                               RowsOf(mlp.gate_up_proj, 0, inner))
            object.__setattr__(mlp, "up_proj",
                               RowsOf(mlp.gate_up_proj, inner, 2 * inner))
            if scaling.get("type") in ("longrope", "su"):
                attention.rotary_emb = LongRope440(head_dim, config)


def phi3_longrope():
    """Phi-3 with LongRoPE (Phi-3-mini-128k's rope_scaling): short factors
    up to 8 positions, long ones past them, a context of 32 (magnitude
    sqrt(1 + ln 4 / ln 8)). The golden is transformers' cached generation,
    one token a call (each row rotated by its own sequence length: tfmc's
    convention, as for dynamic NTK), of the 12 tokens."""
    scaling = {"type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0],
               "long_factor": [1.2, 2.5, 4.0, 8.0]}
    model = build(tf.MistralConfig, tf.MistralForCausalLM, 29,
                  num_key_value_heads=2, sliding_window=None,
                  tie_word_embeddings=False, rope_scaling=scaling,
                  original_max_position_embeddings=8)
    for layer in model.model.layers:
        layer.self_attn.rotary_emb = LongRope440(
            model.config.hidden_size // model.config.num_attention_heads,
            model.config)
    write("phi3-longrope", model, config_patch={
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
        "sliding_window": None, "attention_bias": False, "pad_token_id": 0})
    save_phi3_weights("phi3-longrope", model)
    ids = torch.tensor([TOKENS])
    with torch.no_grad():
        past, rows = None, []
        for i in range(len(TOKENS)):
            out = model(ids[:, i:i + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0, -1].float())
        cached = torch.stack(rows)
    cached.numpy().astype("<f4").tofile(
        os.path.join(OUT, "phi3-longrope.cached.logits.bin"))
    print(f"phi3 longrope: cached rows {tuple(cached.shape)}")


def mixtral():
    """Mixtral (4.40's MixtralForCausalLM): four SwiGLU experts, each token
    through its top 2, GQA 4/2; 12 tokens spread over every expert."""
    write("mixtral", build(tf.MixtralConfig, tf.MixtralForCausalLM, 23,
                           num_key_value_heads=2, num_local_experts=4,
                           num_experts_per_tok=2, sliding_window=None,
                           tie_word_embeddings=False))


def qwen2_moe():
    """Qwen2-MoE (4.40's Qwen2MoeForCausalLM): four experts of 24, each
    token through its top 2, weights not renormalized (norm_topk_prob
    false, as Qwen1.5-MoE), a shared expert of 40 scaled by its sigmoid
    gate, Qwen2's Q, K and V biases."""
    write("qwen2-moe", build(tf.Qwen2MoeConfig, tf.Qwen2MoeForCausalLM, 24,
                             num_key_value_heads=2, num_experts=4,
                             num_experts_per_tok=2, moe_intermediate_size=24,
                             shared_expert_intermediate_size=40,
                             norm_topk_prob=False, decoder_sparse_step=1,
                             tie_word_embeddings=False))


def main():
    yarn()
    phi3_longrope()
    qwen3_moe()
    gemma3()
    gemma2()
    olmoe()
    qwen2_moe()
    mixtral()
    phi3()
    qwen3()
    gpt_neo()
    mistral_window_convention()
    dynamic_ntk_past_max_context()
    write("qwen2", build(tf.Qwen2Config, tf.Qwen2ForCausalLM, 1,
                         num_key_value_heads=2, tie_word_embeddings=False,
                         sliding_window=32, rope_theta=1e4))
    write("gemma", build(tf.GemmaConfig, tf.GemmaForCausalLM, 2,
                         num_key_value_heads=1, head_dim=16,
                         hidden_activation="gelu_pytorch_tanh"))
    write("starcoder2", build(tf.Starcoder2Config, tf.Starcoder2ForCausalLM, 3,
                              num_key_value_heads=2, sliding_window=32))
    write("stablelm", build(tf.StableLmConfig, tf.StableLmForCausalLM, 4,
                            num_key_value_heads=2, use_qkv_bias=True,
                            partial_rotary_factor=0.25))
    write("stablelm-parallel", build(tf.StableLmConfig, tf.StableLmForCausalLM, 5,
                                     num_key_value_heads=4,
                                     use_parallel_residual=True,
                                     partial_rotary_factor=0.5))
    write("olmo", build(tf.OlmoConfig, tf.OlmoForCausalLM, 12,
                        num_key_value_heads=2, attention_bias=True))
    # clip_qkv well inside the projections' range (about ±3 here), so that
    # the clamp changes most of Q, K and V.
    write("olmo-clip-qkv", build(tf.OlmoConfig, tf.OlmoForCausalLM, 13,
                                 num_key_value_heads=2, attention_bias=True,
                                 clip_qkv=0.5))
    write("phi", build(tf.PhiConfig, tf.PhiForCausalLM, 6,
                       num_key_value_heads=4, partial_rotary_factor=0.5, hidden_act="gelu_new"))
    write("gpt-neox", build(tf.GPTNeoXConfig, tf.GPTNeoXForCausalLM, 7,
                            rotary_pct=0.25, use_parallel_residual=True,
                            hidden_act="gelu"))
    write("gpt-neox-sequential", build(tf.GPTNeoXConfig, tf.GPTNeoXForCausalLM, 8,
                                       rotary_pct=0.5, use_parallel_residual=False))
    write("llama-rope-linear", build(tf.LlamaConfig, tf.LlamaForCausalLM, 9,
                                     num_key_value_heads=2,
                                     rope_scaling={"type": "linear", "factor": 4.0}))
    write("llama-rope-dynamic", build(tf.LlamaConfig, tf.LlamaForCausalLM, 10,
                                      num_key_value_heads=4,
                                      rope_scaling={"type": "dynamic", "factor": 2.0}))
    llama3 = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                  high_freq_factor=4.0, original_max_position_embeddings=64)
    model = build(tf.LlamaConfig, tf.LlamaForCausalLM, 11, num_key_value_heads=2,
                  rope_theta=500000.0)
    inverse = llama3_inverse_frequencies(500000.0, 8, 8.0, 1.0, 4.0, 64)
    for layer in model.model.layers:
        layer.self_attn.rotary_emb.inv_freq.copy_(inverse)
    write("llama-rope-llama3", model, config_patch={"rope_scaling": llama3})


class NormedProjection(torch.nn.Linear):
    """Q's or K's projection followed by Qwen3's RMSNorm of each head
    (transformers 4.51's Qwen3Attention: q_norm(q_proj(x).view(..., -1,
    head_dim))), the norm held by the attention beside it (as q_norm), not
    by this module."""

    def forward(self, x):
        y = super().forward(x)
        norm = self.__dict__["head_norm"]
        return norm(y.view(*y.shape[:-1], -1, norm.weight.shape[0])).view(
            y.shape)


class Qwen3ForCausalLM440(tf.LlamaForCausalLM):
    """transformers 4.51's Qwen3ForCausalLM on 4.40's Llama (no biases):
    every attention's q_proj and k_proj normed per head by its q_norm and
    k_norm (Qwen3RMSNorm computes as 4.40's LlamaRMSNorm) before RoPE. Its
    weights have Qwen3's names."""

    def __init__(self, config):
        super().__init__(config)
        head_dim = config.hidden_size // config.num_attention_heads
        for layer in self.model.layers:
            attention = layer.self_attn
            for part in ("q", "k"):
                old = getattr(attention, f"{part}_proj")
                norm = tf.models.llama.modeling_llama.LlamaRMSNorm(
                    head_dim, config.rms_norm_eps)
                setattr(attention, f"{part}_norm", norm)
                projection = NormedProjection(old.in_features,
                                              old.out_features, bias=False)
                projection.__dict__["head_norm"] = norm
                setattr(attention, f"{part}_proj", projection)


def qwen3():
    """Qwen3 (added in transformers 4.51) as Qwen3ForCausalLM440, saved with
    Qwen3's config."""
    config = tf.LlamaConfig(**SIZES, num_key_value_heads=2,
                            tie_word_embeddings=False, rope_theta=1e6,
                            rms_norm_eps=1e-6)
    config._attn_implementation = "eager"
    torch.manual_seed(21)
    model = Qwen3ForCausalLM440(config).eval()
    randomize(model, 21)
    write("qwen3", model, config_patch={
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
        "head_dim": config.hidden_size // config.num_attention_heads,
        "use_sliding_window": False, "sliding_window": None,
        "max_window_layers": 2})


class WholeNormedProjection(torch.nn.Linear):
    """Q's or K's projection followed by OLMoE's RMSNorm of the whole
    projection (transformers 4.45's OlmoeAttention: q_norm(q_proj(x)), before
    the heads are split; OlmoeRMSNorm computes as 4.40's LlamaRMSNorm), the
    norm held by the attention beside it."""

    def forward(self, x):
        return self.__dict__["whole_norm"](super().forward(x))


class OlmoeExpert440(torch.nn.Module):
    """4.45's OlmoeMLP: down(silu(gate(x)) * up(x))."""

    def __init__(self, config):
        super().__init__()
        width, inner = config.hidden_size, config.intermediate_size
        self.gate_proj = torch.nn.Linear(width, inner, bias=False)
        self.up_proj = torch.nn.Linear(width, inner, bias=False)
        self.down_proj = torch.nn.Linear(inner, width, bias=False)

    def forward(self, x):
        silu = torch.nn.functional.silu
        return self.down_proj(silu(self.gate_proj(x)) * self.up_proj(x))


class OlmoeSparseBlock440(torch.nn.Module):
    """4.45's OlmoeSparseMoeBlock: softmax in f32, top k, renormalized only
    where norm_topk_prob, each expert over its tokens."""

    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.top_k = config.num_experts_per_tok
        self.norm_topk_prob = config.norm_topk_prob
        self.gate = torch.nn.Linear(config.hidden_size, self.num_experts,
                                    bias=False)
        self.experts = torch.nn.ModuleList(
            [OlmoeExpert440(config) for _ in range(self.num_experts)])

    def forward(self, hidden_states):
        batch, length, width = hidden_states.shape
        rows = hidden_states.view(-1, width)
        router_logits = self.gate(rows)
        weights = torch.softmax(router_logits, dim=1, dtype=torch.float)
        weights, chosen = torch.topk(weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            weights /= weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(rows)
        mask = torch.nn.functional.one_hot(
            chosen, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            slot, token = torch.where(mask[e])
            y = self.experts[e](rows[token]) * weights[token, slot, None]
            out.index_add_(0, token, y)
        return out.reshape(batch, length, width), router_logits


class OlmoeForCausalLM440(tf.MixtralForCausalLM):
    """transformers 4.45's OlmoeForCausalLM on 4.40's Mixtral (whose layers
    are OLMoE's but for these): every attention's q_proj and k_proj normed
    whole by its q_norm and k_norm, and each layer's experts OLMoE's sparse
    block, held as mlp (OLMoE's weight names) and run where Mixtral's
    block_sparse_moe was. Takes OLMoE's config fields (num_experts,
    norm_topk_prob) on a MixtralConfig."""

    def __init__(self, config):
        config.num_local_experts = config.num_experts
        super().__init__(config)
        if getattr(config, "clip_qkv", None) is not None:
            raise ValueError("OlmoeForCausalLM440 does not clip Q, K and V")
        for layer in self.model.layers:
            attention = layer.self_attn
            for part in ("q", "k"):
                old = getattr(attention, f"{part}_proj")
                norm, projection = self.normed_projection(old, config)
                setattr(attention, f"{part}_norm", norm)
                setattr(attention, f"{part}_proj", projection)
            block = OlmoeSparseBlock440(config)
            del layer.block_sparse_moe
            layer.mlp = block
            object.__setattr__(layer, "block_sparse_moe", block)

    @staticmethod
    def normed_projection(old, config):
        """OLMoE's Q or K projection, normed whole, and its norm."""
        norm = tf.models.llama.modeling_llama.LlamaRMSNorm(
            old.out_features, config.rms_norm_eps)
        projection = WholeNormedProjection(old.in_features, old.out_features,
                                           bias=False)
        projection.__dict__["whole_norm"] = norm
        return norm, projection


class Qwen3MoeForCausalLM440(OlmoeForCausalLM440):
    """transformers 4.51's Qwen3MoeForCausalLM: OLMoE's layout (4.51's
    Qwen3MoeSparseMoeBlock routes as OLMoE's block does, renormalizing
    where norm_topk_prob) with Qwen3's RMSNorm of each head of Q and K,
    experts of moe_intermediate_size."""

    def __init__(self, config):
        config.intermediate_size = config.moe_intermediate_size
        super().__init__(config)

    @staticmethod
    def normed_projection(old, config):
        head_dim = config.hidden_size // config.num_attention_heads
        norm = tf.models.llama.modeling_llama.LlamaRMSNorm(
            head_dim, config.rms_norm_eps)
        projection = NormedProjection(old.in_features, old.out_features,
                                      bias=False)
        projection.__dict__["head_norm"] = norm
        return norm, projection


def qwen3_moe():
    """Qwen3-MoE as Qwen3MoeForCausalLM440: four experts of 24, top 2,
    renormalized (norm_topk_prob true, as Qwen3-30B-A3B), per-head Q and K
    norms, saved with Qwen3-MoE's config."""
    model = build(tf.MixtralConfig, Qwen3MoeForCausalLM440, 28,
                  num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                  norm_topk_prob=True, moe_intermediate_size=24,
                  sliding_window=None, tie_word_embeddings=False,
                  rms_norm_eps=1e-6, rope_theta=1e6)
    write("qwen3-moe", model, config_patch={
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "head_dim": 8, "intermediate_size": 64, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "use_sliding_window": False,
        "attention_bias": False}, config_drop=("num_local_experts",))


def olmoe():
    """OLMoE (added in transformers 4.45) as OlmoeForCausalLM440: four
    experts, top 2, weights not renormalized (norm_topk_prob false, as
    OLMoE-1B-7B), saved with OLMoE's config."""
    model = build(tf.MixtralConfig, OlmoeForCausalLM440, 25,
                  num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                  norm_topk_prob=False, sliding_window=None,
                  tie_word_embeddings=False, rms_norm_eps=1e-5,
                  rope_theta=10000.0)
    write("olmoe", model, config_patch={
        "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe",
        "clip_qkv": None, "pad_token_id": 1},
        config_drop=("num_local_experts", "sliding_window"))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def gemma2_attention(attention, config, window, rope_base, rope_factor):
    """4.42's Gemma2Attention (eager) for 4.40's GemmaAttention: scores
    scaled by query_pre_attn_scalar^-1/2 and soft-capped
    (attn_logit_softcapping) before the mask, which a sliding layer limits
    to the last `window` keys (torch.tril(..., diagonal=-window)); RoPE of
    base `rope_base`, positions divided by `rope_factor` (Gemma 3's local
    and global layers); Gemma 3's per-head q_norm and k_norm (attributes of
    `attention`, where present) before RoPE."""
    heads, kv_heads = attention.num_heads, attention.num_key_value_heads
    d = attention.head_dim
    scaling = config.query_pre_attn_scalar ** -0.5
    softcap = getattr(config, "attn_logit_softcapping", None)

    def forward(hidden_states, attention_mask=None, position_ids=None,
                past_key_value=None, output_attentions=False, use_cache=False,
                cache_position=None, **kwargs):
        b, n, _ = hidden_states.shape
        q = attention.q_proj(hidden_states).view(b, n, heads, d).transpose(1, 2)
        k = attention.k_proj(hidden_states).view(b, n, kv_heads, d).transpose(1, 2)
        v = attention.v_proj(hidden_states).view(b, n, kv_heads, d).transpose(1, 2)
        if hasattr(attention, "q_norm"):
            q, k = attention.q_norm(q), attention.k_norm(k)
        inverse = 1.0 / rope_base ** (
            torch.arange(0, d, 2, dtype=torch.int64).float() / d) / rope_factor
        angles = position_ids[:, :, None].float() * inverse[None, None, :]
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos()[:, None], angles.sin()[:, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) * scaling
        if softcap is not None:
            scores = torch.tanh(scores / softcap) * softcap
        mask = attention_mask[:, :, :, :n]
        if window:
            far = torch.tril(torch.ones_like(mask, dtype=torch.bool),
                             diagonal=-window)
            mask = torch.where(far, torch.finfo(mask.dtype).min, mask)
        weights = torch.softmax((scores + mask).float(), dim=-1)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(b, n, -1)
        return attention.o_proj(out), None, past_key_value
    return forward


def gemma2_layer(layer):
    """4.42's Gemma2DecoderLayer.forward for 4.40's GemmaDecoderLayer: each
    branch's output normed (post_attention_layernorm, post_feedforward_
    layernorm) before its residual add, the MLP's input by
    pre_feedforward_layernorm."""
    def forward(hidden_states, attention_mask=None, position_ids=None,
                past_key_value=None, output_attentions=False, use_cache=False,
                cache_position=None, **kwargs):
        attended, _, cache = layer.self_attn(
            layer.input_layernorm(hidden_states), attention_mask=attention_mask,
            position_ids=position_ids, past_key_value=past_key_value)
        x = hidden_states + layer.post_attention_layernorm(attended)
        y = layer.mlp(layer.pre_feedforward_layernorm(x))
        x = x + layer.post_feedforward_layernorm(y)
        return (x, cache) if use_cache else (x,)
    return forward


class Gemma2ForCausalLM440(tf.GemmaForCausalLM):
    """transformers 4.42's Gemma2ForCausalLM (and, with a Gemma 3 config,
    4.50's Gemma3ForCausalLM) on 4.40's Gemma, whose embedding scaling,
    (1 + w) RMSNorms and GeGLU MLP they share: gemma2_layer's norms,
    gemma2_attention's scaling, soft-capping, windows and RoPE, and the
    final logits soft-capped (final_logit_softcapping). Gemma 2's sliding
    layers are the even ones; Gemma 3's (config.rope_local_base_freq set)
    all but each sliding_window_pattern-th, with RoPE of their own base and
    q_norm and k_norm in every layer."""

    def __init__(self, config):
        super().__init__(config)
        norm = tf.models.gemma.modeling_gemma.GemmaRMSNorm
        gemma3 = getattr(config, "rope_local_base_freq", None) is not None
        scaling = getattr(config, "rope_scaling", None) or {}
        for index, layer in enumerate(self.model.layers):
            layer.pre_feedforward_layernorm = norm(config.hidden_size,
                                                   config.rms_norm_eps)
            layer.post_feedforward_layernorm = norm(config.hidden_size,
                                                    config.rms_norm_eps)
            attention = layer.self_attn
            if gemma3:
                sliding = (index + 1) % config.sliding_window_pattern != 0
                attention.q_norm = norm(config.head_dim, config.rms_norm_eps)
                attention.k_norm = norm(config.head_dim, config.rms_norm_eps)
                base = config.rope_local_base_freq if sliding else config.rope_theta
                factor = 1.0 if sliding else scaling.get("factor", 1.0)
            else:
                sliding = index % 2 == 0
                base, factor = config.rope_theta, 1.0
            window = config.sliding_window if sliding else None
            attention.forward = gemma2_attention(attention, config, window,
                                                 base, factor)
            layer.forward = gemma2_layer(layer)
        cap = getattr(config, "final_logit_softcapping", None)
        if cap is not None:
            head = self.lm_head
            linear = head.forward
            head.forward = lambda x: torch.tanh(linear(x) / cap) * cap


def gemma2():
    """Gemma 2 as Gemma2ForCausalLM440: four layers, the even ones with a
    window of 4 (of the 12 tokens), a head size of its own, a
    query_pre_attn_scalar unlike it, and soft-caps low enough (2 on the
    scores, 3 on the logits) to change most values."""
    model = build(tf.GemmaConfig, Gemma2ForCausalLM440, 26,
                  num_hidden_layers=4, num_key_value_heads=2, head_dim=16,
                  hidden_activation="gelu_pytorch_tanh",
                  query_pre_attn_scalar=24, sliding_window=4,
                  attn_logit_softcapping=2.0, final_logit_softcapping=3.0)
    write("gemma2", model, config_patch={
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
        "cache_implementation": "hybrid"})


def gemma3():
    """Gemma 3's text model as Gemma2ForCausalLM440 with a Gemma 3 config:
    four layers, every second global (sliding_window_pattern 2), local
    layers with a window of 4 and RoPE of base 100, global ones of base
    10000 and linear scaling by 2, per-head Q and K norms."""
    model = build(tf.GemmaConfig, Gemma2ForCausalLM440, 27,
                  num_hidden_layers=4, num_key_value_heads=2, head_dim=16,
                  hidden_activation="gelu_pytorch_tanh",
                  query_pre_attn_scalar=16, sliding_window=4,
                  sliding_window_pattern=2, rope_theta=10000.0,
                  rope_local_base_freq=100.0,
                  rope_scaling={"rope_type": "linear", "factor": 2.0})
    write("gemma3", model, config_patch={
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
        "attn_logit_softcapping": None, "final_logit_softcapping": None,
        "cache_implementation": "hybrid"})


if __name__ == "__main__":
    # Only the fixtures named (functions of this file), or all of them.
    if sys.argv[1:]:
        for fixture in sys.argv[1:]:
            globals()[fixture]()
    else:
        main()
