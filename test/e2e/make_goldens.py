#!/usr/bin/env python3
"""Writes the end-to-end test models and their golden outputs.

Independent of tfmc: the reference is NumPy (float64) following the Hugging
Face definitions of GPT-2 and LLaMA and llama2.c's run.c. Outputs are
committed, so CI needs no NumPy. Regenerate with

    /usr/bin/python3 test/e2e/make_goldens.py [--shared ../shared/models]
"""
import argparse
import json
import os
import re
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "Inputs")

# ---------------------------------------------------------------- writers


def to_dtype(array, dtype):
    """Rounds float32 `array` to `dtype`; returns (bytes, f32 values seen)."""
    a = np.asarray(array, dtype=np.float32)
    if dtype == "F32":
        return a.tobytes(), a
    if dtype == "F16":
        h = a.astype(np.float16)
        return h.tobytes(), h.astype(np.float32)
    if dtype == "BF16":
        bits = a.view(np.uint32)
        # round to nearest even on the upper 16 bits
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        return rounded.tobytes(), (rounded.astype(np.uint32) << 16).view(np.float32)
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype):
    """tensors: name -> float32 array. Returns name -> values as stored."""
    header, blobs, seen, offset = {}, [], {}, 0
    for name, array in tensors.items():
        data, values = to_dtype(array, dtype)
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        seen[name] = values.reshape(array.shape).astype(np.float64)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    return seen

# ---------------------------------------------------------- references


def layer_norm(x, g, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def rms_norm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1 + np.exp(-x))


def causal_attention(q, k, v, window=None):
    """q: [s, h, d], k/v: [s, kvh, d]; GQA by repeating KV heads; with a
    window, position i sees positions (i - window, i]."""
    s, h, d = q.shape
    group = h // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("ihd,jhd->hij", q, k) / np.sqrt(d)
    scores = scores + np.triu(np.full((s, s), -np.inf), 1)
    if window:
        scores = scores + np.tril(np.full((s, s), -np.inf), -window)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    return np.einsum("hij,jhd->ihd", probs, v)


def rope(x, theta, interleaved):
    s, h, d = x.shape
    inv = 1.0 / theta ** (np.arange(0, d, 2) / d)
    angles = np.arange(s)[:, None] * inv[None, :]  # [s, d/2]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out
    a, b = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)


def gpt2_forward(w, cfg, tokens, prefix=""):
    p = prefix
    d, heads = cfg["n_embd"], cfg["n_head"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    x = w[p + "wte.weight"][tokens] + w[p + "wpe.weight"][np.arange(len(tokens))]
    for l in range(cfg["n_layer"]):
        h = f"{p}h.{l}."
        a = layer_norm(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps)
        qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]
        q, k, v = (t.reshape(len(tokens), heads, d // heads) for t in np.split(qkv, 3, -1))
        att = causal_attention(q, k, v).reshape(len(tokens), d)
        x = x + att @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
        m = layer_norm(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps)
        m = gelu_tanh(m @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"])
        x = x + m @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
    x = layer_norm(x, w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps)
    return x @ w[p + "wte.weight"].T


def llama_forward(w, cfg, tokens, product_inputs=None):
    """product_inputs: a dtype ("BF16", "F16") every matrix product's
    activations are rounded to first, as tensor cores multiply them
    (--target=cuda's prefill with such weights); None keeps them exact."""
    def matmul(a, weight):
        if product_inputs:
            a = to_dtype(a, product_inputs)[1].astype(np.float64)
        return a @ weight.T
    d, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kvh = cfg.get("num_key_value_heads", heads)
    hd, s = d // heads, len(tokens)
    eps, theta = cfg["rms_norm_eps"], cfg.get("rope_theta", 10000.0)
    x = w["model.embed_tokens.weight"][tokens]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = matmul(a, w[p + "self_attn.q_proj.weight"]).reshape(s, heads, hd)
        k = matmul(a, w[p + "self_attn.k_proj.weight"]).reshape(s, kvh, hd)
        v = matmul(a, w[p + "self_attn.v_proj.weight"]).reshape(s, kvh, hd)
        # llama.cpp's layout (GGUF) rotates adjacent pairs, HF's halves.
        interleaved = cfg.get("rope_interleaved", False)
        q, k = rope(q, theta, interleaved), rope(k, theta, interleaved)
        att = causal_attention(q, k, v, cfg.get("sliding_window"))
        x = x + matmul(att.reshape(s, d), w[p + "self_attn.o_proj.weight"])
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = silu(matmul(m, w[p + "mlp.gate_proj.weight"])) * matmul(m, w[p + "mlp.up_proj.weight"])
        x = x + matmul(g, w[p + "mlp.down_proj.weight"])
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return matmul(x, head)

# ---------------------------------------------------------- test models


def random_gpt2(rng, cfg, prefix):
    d, inner, v, n = cfg["n_embd"], 4 * cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    t = {prefix + "wte.weight": rng.normal(0, 0.5, (v, d)),
         prefix + "wpe.weight": rng.normal(0, 0.2, (n, d))}
    for l in range(cfg["n_layer"]):
        h = f"{prefix}h.{l}."
        t[h + "ln_1.weight"] = 1 + rng.normal(0, 0.1, d)
        t[h + "ln_1.bias"] = rng.normal(0, 0.1, d)
        t[h + "attn.c_attn.weight"] = rng.normal(0, 0.2, (d, 3 * d))  # Conv1D [in, out]
        t[h + "attn.c_attn.bias"] = rng.normal(0, 0.1, 3 * d)
        t[h + "attn.c_proj.weight"] = rng.normal(0, 0.2, (d, d))
        t[h + "attn.c_proj.bias"] = rng.normal(0, 0.1, d)
        t[h + "ln_2.weight"] = 1 + rng.normal(0, 0.1, d)
        t[h + "ln_2.bias"] = rng.normal(0, 0.1, d)
        t[h + "mlp.c_fc.weight"] = rng.normal(0, 0.2, (d, inner))
        t[h + "mlp.c_fc.bias"] = rng.normal(0, 0.1, inner)
        t[h + "mlp.c_proj.weight"] = rng.normal(0, 0.2, (inner, d))
        t[h + "mlp.c_proj.bias"] = rng.normal(0, 0.1, d)
        # The causal-mask buffer old GPT-2 checkpoints carry: ignored.
        t[h + "attn.bias"] = np.tril(np.ones((1, 1, n, n)))
    t[prefix + "ln_f.weight"] = 1 + rng.normal(0, 0.1, d)
    t[prefix + "ln_f.bias"] = rng.normal(0, 0.1, d)
    return {k: np.asarray(a, np.float32) for k, a in t.items()}


def random_llama(rng, cfg):
    d, inner, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * (d // heads)
    t = {"model.embed_tokens.weight": rng.normal(0, 0.5, (v, d))}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = 1 + rng.normal(0, 0.1, d)
        t[p + "self_attn.q_proj.weight"] = rng.normal(0, 0.2, (d, d))
        t[p + "self_attn.k_proj.weight"] = rng.normal(0, 0.2, (kv, d))
        t[p + "self_attn.v_proj.weight"] = rng.normal(0, 0.2, (kv, d))
        t[p + "self_attn.o_proj.weight"] = rng.normal(0, 0.2, (d, d))
        t[p + "post_attention_layernorm.weight"] = 1 + rng.normal(0, 0.1, d)
        t[p + "mlp.gate_proj.weight"] = rng.normal(0, 0.2, (inner, d))
        t[p + "mlp.up_proj.weight"] = rng.normal(0, 0.2, (inner, d))
        t[p + "mlp.down_proj.weight"] = rng.normal(0, 0.2, (d, inner))
    t["model.norm.weight"] = 1 + rng.normal(0, 0.1, d)
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = rng.normal(0, 0.5, (v, d))
    return {k: np.asarray(a, np.float32) for k, a in t.items()}


GPT2 = {"model_type": "gpt2", "vocab_size": 64, "n_embd": 32, "n_layer": 2,
        "n_head": 4, "n_positions": 32, "layer_norm_epsilon": 1e-5,
        "activation_function": "gelu_new"}
LLAMA = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32,
         "intermediate_size": 48, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 4,
         "max_position_embeddings": 32, "rms_norm_eps": 1e-5,
         "rope_theta": 10000.0, "hidden_act": "silu",
         "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}

# name -> (config, dtype, extra)
MODELS = {
    "gpt2-f32": (GPT2, "F32", {}),
    "gpt2-prefixed-bf16": (GPT2, "BF16", {"prefix": "transformer."}),
    "llama-mha-f32": (LLAMA, "F32", {}),
    "llama-gqa-f16-untied": (dict(LLAMA, num_key_value_heads=2,
                                  tie_word_embeddings=False), "F16", {}),
    "llama-gqa-bf16-sharded": (dict(LLAMA, num_key_value_heads=1,
                                    rope_theta=500000.0), "BF16", {"shards": 2}),
    "mistral-window4": (dict(LLAMA, model_type="mistral", sliding_window=4,
                             num_key_value_heads=2), "F32", {}),
    # Grouped-query attention that 4 ranks split (test/e2e/ranks).
    "llama-gqa8-f32": (dict(LLAMA, num_attention_heads=8,
                            num_key_value_heads=4), "F32", {}),
}
TOKENS = [1, 17, 42, 5, 63, 0, 28, 9, 33, 12, 50, 7]


def write_model(name, cfg, dtype, extra, seed):
    rng = np.random.default_rng(seed)
    folder = os.path.join(INPUTS, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if cfg["model_type"] == "gpt2":
        tensors = random_gpt2(rng, cfg, extra.get("prefix", ""))
    else:
        tensors = random_llama(rng, cfg)
    shards = extra.get("shards", 1)
    seen = {}
    if shards == 1:
        seen = write_safetensors(os.path.join(folder, "model.safetensors"), tensors, dtype)
    else:
        names = list(tensors)
        weight_map = {}
        for i in range(shards):
            part = names[i::shards]
            file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
            seen.update(write_safetensors(os.path.join(folder, file),
                                          {n: tensors[n] for n in part}, dtype))
            weight_map.update({n: file for n in part})
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)
    tokens = np.array(TOKENS)
    if cfg["model_type"] == "gpt2":
        logits = gpt2_forward(seen, cfg, tokens, extra.get("prefix", ""))
    else:
        logits = llama_forward(seen, cfg, tokens)
        if dtype in ("BF16", "F16"):
            # What --target=cuda's tensor-core prefill computes
            # (test/gpu/run-gpu-checks.sh).
            rounded = llama_forward(seen, cfg, tokens, product_inputs=dtype)
            rounded.astype("<f4").tofile(
                os.path.join(INPUTS, name + ".tensor-core.logits.bin"))
    logits.astype("<f4").tofile(os.path.join(INPUTS, name + ".logits.bin"))


# ------------------------------------------------------- GPT-2 BPE


def bytes_to_unicode():
    """GPT-2's printable spelling of every byte (encoder.py)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# GPT-2's pattern with \p{L} as [^\W\d_] and \p{N} as \d (Python's re has
# no \p classes).
PRETOKEN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")


def bpe_word(word, ranks):
    """encoder.py's bpe(): merge the lowest-ranked pair until none is left."""
    word = list(word)
    while len(word) > 1:
        pairs = [(ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(word, word[1:]))]
        rank, i = min(pairs)
        if rank == 1 << 30:
            break
        word[i:i + 2] = [word[i] + word[i + 1]]
    return word


CORPUS = ("It's a test, isn't it? The quick brown fox jumps over the lazy dog. "
          "The dog sleeps; the fox runs. Numbers like 42 and 3.14 appear too. "
          "Once upon a time there was a little test of the tokenizer.")


def write_gpt2_bpe(seed):
    name = "gpt2-bpe"
    folder = os.path.join(INPUTS, name)
    os.makedirs(folder, exist_ok=True)
    spell = bytes_to_unicode()
    vocab = {spell[b]: i for i, b in enumerate(spell)}  # GPT-2's byte order
    words = [[spell[b] for b in w.encode()] for w in PRETOKEN.findall(CORPUS)]
    merges = []
    for _ in range(40):  # train: merge the most frequent adjacent pair
        counts = {}
        for w in words:
            for pair in zip(w, w[1:]):
                counts[pair] = counts.get(pair, 0) + 1
        pair = max(sorted(counts), key=counts.get)
        merges.append(pair)
        vocab[pair[0] + pair[1]] = len(vocab)
        words = [bpe_word(w, {pair: 0}) for w in words]
    vocab["<|endoftext|>"] = len(vocab)
    with open(os.path.join(folder, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    cfg = dict(GPT2, vocab_size=len(vocab), bos_token_id=len(vocab) - 1,
               eos_token_id=len(vocab) - 1)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    rng = np.random.default_rng(seed)
    write_safetensors(os.path.join(folder, "model.safetensors"), random_gpt2(rng, cfg, ""), "F32")

    ranks = {pair: i for i, pair in enumerate(merges)}
    prompts = ["Hello world", "It's  a test,  isn't it?\n\nYes: 42 apples_and 3.14!",
               "The quick brown fox", "   leading spaces and trailing  ",
               "tabs\tand\nnewlines \n x", "caf\u00e9 \u65e5\u672c"]
    os.makedirs(os.path.join(INPUTS, name + ".prompts"), exist_ok=True)
    lines = []
    for i, text in enumerate(prompts):
        with open(os.path.join(INPUTS, name + ".prompts", f"{i}.txt"), "w") as f:
            f.write(text)
        ids = []
        for token in PRETOKEN.findall(text):
            ids += [vocab[p] for p in bpe_word([spell[b] for b in token.encode()], ranks)]
        lines.append(" ".join(map(str, ids)))
    with open(os.path.join(INPUTS, name + ".prompt-ids.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ------------------------------------------------------- stories260K


def llama2c_greedy(path, steps):
    """llama2.c's run.c, greedy: forward over the whole prefix each step."""
    with open(path, "rb") as f:
        dim, hidden, layers, heads, kvh, vocab, seq = struct.unpack("<7i", f.read(28))
        data = np.frombuffer(f.read(), dtype="<f4").astype(np.float64)
    shared, vocab = vocab > 0, abs(vocab)
    hd = dim // heads
    kv = kvh * hd
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        out = data[at:at + n].reshape(shape)
        at += n
        return out
    emb = take(vocab, dim)
    att_norm = take(layers, dim)
    wq, wk, wv = take(layers, dim, dim), take(layers, kv, dim), take(layers, kv, dim)
    wo = take(layers, dim, dim)
    ffn_norm = take(layers, dim)
    w1, w2, w3 = take(layers, hidden, dim), take(layers, dim, hidden), take(layers, hidden, dim)
    final = take(dim)
    take(seq, hd)  # legacy RoPE tables
    head = emb if shared else take(vocab, dim)

    def forward(tokens):
        s = len(tokens)
        x = emb[tokens]
        for l in range(layers):
            a = rms_norm(x, att_norm[l], 1e-5)
            q = rope((a @ wq[l].T).reshape(s, heads, hd), 10000.0, True)
            k = rope((a @ wk[l].T).reshape(s, kvh, hd), 10000.0, True)
            v = (a @ wv[l].T).reshape(s, kvh, hd)
            x = x + causal_attention(q, k, v).reshape(s, dim) @ wo[l].T
            m = rms_norm(x, ffn_norm[l], 1e-5)
            x = x + (silu(m @ w1[l].T) * (m @ w3[l].T)) @ w2[l].T
        return rms_norm(x, final, 1e-5) @ head.T

    tokens = [1]
    for _ in range(steps):
        tokens.append(int(np.argmax(forward(np.array(tokens))[-1])))
    return tokens[1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=os.path.join(HERE, "../../../shared/models"))
    args = parser.parse_args()
    for seed, (name, (cfg, dtype, extra)) in enumerate(MODELS.items()):
        write_model(name, cfg, dtype, extra, seed)
        print("wrote", name)
    write_gpt2_bpe(5)  # its seed since it was first written
    print("wrote gpt2-bpe")
    with open(os.path.join(INPUTS, "tokens.txt"), "w") as f:
        f.write(" ".join(map(str, TOKENS)) + "\n")
    stories = os.path.join(args.shared, "stories260K", "stories260K.bin")
    if os.path.exists(stories):
        ids = llama2c_greedy(stories, 200)
        with open(os.path.join(INPUTS, "stories260K.greedy200.txt"), "w") as f:
            f.write(" ".join(map(str, ids)) + "\n")
        print("wrote stories260K greedy tokens")


if __name__ == "__main__":
    main()
