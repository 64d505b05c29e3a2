#!/usr/bin/env python3
"""The PyTorch peer of bench/compare_peers.py: GPT-2 or LLaMA (as Hugging
Face defines them) with a KV cache, in plain torch, on the same safetensors
weights as tfmc. Prints one JSON line: prefill tokens/s for the given prompt
length, decode tokens/s over the new tokens, peak RSS.

Run it as compare_peers.py does, PyTorch's fastest setting here:
    OPENBLAS_NUM_THREADS=2 /usr/bin/python3 torch_peer.py MODEL_DIR --prompt 128 --new 64
"""
import argparse
import json
import math
import resource
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F


def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data, "<f4", (b - a) // 4, a).reshape(t["shape"]).copy())
    return out


class Model:
    def __init__(self, directory):
        with open(f"{directory}/config.json") as f:
            self.c = json.load(f)
        self.w = load(f"{directory}/model.safetensors")
        self.gpt2 = self.c["model_type"] == "gpt2"
        if self.gpt2:
            self.d, self.h, self.layers = self.c["n_embd"], self.c["n_head"], self.c["n_layer"]
            self.kvh = self.h
            # Conv1D [in, out] -> nn.Linear layout once, as any port would.
            for l in range(self.layers):
                for n in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
                    k = f"h.{l}.{n}.weight"
                    self.w[k] = self.w[k].t().contiguous()
        else:
            self.d, self.h = self.c["hidden_size"], self.c["num_attention_heads"]
            self.kvh, self.layers = self.c["num_key_value_heads"], self.c["num_hidden_layers"]
            hd = self.d // self.h
            inv = 1.0 / self.c["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd)
            ang = torch.arange(self.c["max_position_embeddings"]).float()[:, None] * inv
            self.cos = torch.cat([ang.cos()] * 2, -1)
            self.sin = torch.cat([ang.sin()] * 2, -1)
        self.hd = self.d // self.h

    def attend(self, q, k, v, cache, l, start):
        s = q.shape[0]
        ck, cv = cache[l]
        ck[start:start + s], cv[start:start + s] = k, v
        k, v = ck[:start + s], cv[:start + s]
        if self.kvh != self.h:
            k = k.repeat_interleave(self.h // self.kvh, 1)
            v = v.repeat_interleave(self.h // self.kvh, 1)
        scores = torch.einsum("ihd,jhd->hij", q, k) / math.sqrt(self.hd)
        t = start + s
        mask = torch.ones(s, t, dtype=torch.bool).triu(start + 1)
        p = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return torch.einsum("hij,jhd->ihd", p, v).reshape(s, -1)

    def rope(self, x, start):
        s, half = x.shape[0], self.hd // 2
        r = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos[start:start + s, None] + r * self.sin[start:start + s, None]

    def forward(self, tokens, cache, start):
        w, s = self.w, len(tokens)
        if self.gpt2:
            x = w["wte.weight"][tokens] + w["wpe.weight"][start:start + s]
            for l in range(self.layers):
                p = f"h.{l}."
                a = F.layer_norm(x, (self.d,), w[p + "ln_1.weight"], w[p + "ln_1.bias"])
                q, k, v = F.linear(a, w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"]).split(self.d, -1)
                o = self.attend(q.view(s, self.h, -1), k.view(s, self.h, -1), v.view(s, self.h, -1), cache, l, start)
                x = x + F.linear(o, w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"])
                m = F.layer_norm(x, (self.d,), w[p + "ln_2.weight"], w[p + "ln_2.bias"])
                m = F.gelu(F.linear(m, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]), approximate="tanh")
                x = x + F.linear(m, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
            x = F.layer_norm(x[-1:], (self.d,), w["ln_f.weight"], w["ln_f.bias"])
            return F.linear(x, w["wte.weight"])
        x = w["model.embed_tokens.weight"][tokens]
        rms = lambda t, g: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5) * g
        for l in range(self.layers):
            p = f"model.layers.{l}."
            a = rms(x, w[p + "input_layernorm.weight"])
            q = self.rope(F.linear(a, w[p + "self_attn.q_proj.weight"]).view(s, self.h, -1), start)
            k = self.rope(F.linear(a, w[p + "self_attn.k_proj.weight"]).view(s, self.kvh, -1), start)
            v = F.linear(a, w[p + "self_attn.v_proj.weight"]).view(s, self.kvh, -1)
            x = x + F.linear(self.attend(q, k, v, cache, l, start), w[p + "self_attn.o_proj.weight"])
            m = rms(x, w[p + "post_attention_layernorm.weight"])
            m = F.silu(F.linear(m, w[p + "mlp.gate_proj.weight"])) * F.linear(m, w[p + "mlp.up_proj.weight"])
            x = x + F.linear(m, w[p + "mlp.down_proj.weight"])
        x = rms(x[-1:], w["model.norm.weight"])
        return F.linear(x, w["lm_head.weight"])

    def new_cache(self, capacity):
        return [(torch.zeros(capacity, self.kvh, self.hd), torch.zeros(capacity, self.kvh, self.hd))
                for _ in range(self.layers)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = Model(args.model)
    vocab = model.c["vocab_size"]
    tokens = torch.tensor(np.random.default_rng(args.prompt).integers(0, vocab, args.prompt))
    with torch.inference_mode():
        model.forward(tokens[:8], model.new_cache(1024), 0)  # warm up
        cache = model.new_cache(1024)
        t = time.perf_counter()
        logits = model.forward(tokens, cache, 0)
        prefill = time.perf_counter() - t
        position, t = args.prompt, time.perf_counter()
        for _ in range(args.new):
            nxt = logits[-1].argmax().view(1)
            logits = model.forward(nxt, cache, position)
            position += 1
        decode = time.perf_counter() - t
    print(json.dumps({"prefill_tokens_per_s": args.prompt / prefill,
                      "decode_tokens_per_s": args.new / decode,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


if __name__ == "__main__":
    main()
