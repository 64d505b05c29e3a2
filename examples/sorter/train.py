#!/usr/bin/env python3
"""Trains the bundled example: a tiny LLaMA-architecture model that sorts
lists of digits ("7 3 9 1 > 1 3 7 9"), and writes it as a Hugging Face
directory tfmc reads: config.json, model.safetensors, tokenizer.model
(SentencePiece protobuf, one piece per character), tokenizer_config.json.

    /usr/bin/python3 examples/sorter/train.py   # Debian's python3-torch

The model is the project's own (trained here, MIT like the repo); sorting
makes every answer checkable. It prints its greedy accuracy on held-out
lists at the end.
"""
import json
import math
import os
import random
import struct

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "model")

# Vocabulary: SentencePiece's three specials, then one piece per character.
PIECES = ["<unk>", "<s>", "</s>", " "] + [str(d) for d in range(10)] + [">"]
BOS, EOS = 1, 2
ID = {p: i for i, p in enumerate(PIECES)}
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "vocab_size": len(PIECES), "hidden_size": 64, "intermediate_size": 172,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 48, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "hidden_act": "silu", "tie_word_embeddings": True,
    "bos_token_id": BOS, "eos_token_id": EOS,
}


def encode(text):
    """As tfmc's runtime encodes a prompt: BOS, the dummy space, characters."""
    return [BOS, ID[" "]] + [ID[c] for c in text]


def example(rng):
    digits = [rng.randrange(10) for _ in range(rng.randint(2, 8))]
    prompt = " ".join(map(str, digits)) + " >"
    answer = " " + " ".join(map(str, sorted(digits)))
    return prompt, answer


class Llama(torch.nn.Module):
    """LLaMA as Hugging Face defines it (rotate-half RoPE, RMSNorm, SwiGLU,
    grouped-query attention), with Hugging Face's parameter names."""

    def __init__(self, c):
        super().__init__()
        d, i = c["hidden_size"], c["intermediate_size"]
        self.h, self.kvh = c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = d // self.h
        lin = lambda o, n: torch.nn.Linear(n, o, bias=False)
        self.embed = torch.nn.Embedding(c["vocab_size"], d)
        self.layers = torch.nn.ModuleList()
        for _ in range(c["num_hidden_layers"]):
            layer = torch.nn.Module()
            layer.norm1 = torch.nn.Parameter(torch.ones(d))
            layer.q, layer.k = lin(d, d), lin(self.kvh * self.hd, d)
            layer.v, layer.o = lin(self.kvh * self.hd, d), lin(d, d)
            layer.norm2 = torch.nn.Parameter(torch.ones(d))
            layer.gate, layer.up, layer.down = lin(i, d), lin(i, d), lin(d, i)
            self.layers.append(layer)
        self.norm = torch.nn.Parameter(torch.ones(d))
        inv = 1.0 / c["rope_theta"] ** (torch.arange(0, self.hd, 2).float() / self.hd)
        angles = torch.arange(c["max_position_embeddings"]).float()[:, None] * inv
        self.register_buffer("cos", torch.cat([angles.cos()] * 2, -1), persistent=False)
        self.register_buffer("sin", torch.cat([angles.sin()] * 2, -1), persistent=False)

    @staticmethod
    def rms(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * g

    def rope(self, x, s):
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos[:s, None] + rotated * self.sin[:s, None]

    def forward(self, tokens):
        b, s = tokens.shape
        x = self.embed(tokens)
        for l in self.layers:
            a = self.rms(x, l.norm1)
            q = self.rope(l.q(a).view(b, s, self.h, self.hd), s)
            k = self.rope(l.k(a).view(b, s, self.kvh, self.hd), s)
            v = l.v(a).view(b, s, self.kvh, self.hd)
            k = k.repeat_interleave(self.h // self.kvh, 2)
            v = v.repeat_interleave(self.h // self.kvh, 2)
            att = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) / math.sqrt(self.hd)
            att = att.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), -1e9)
            o = (att.softmax(-1) @ v.transpose(1, 2)).transpose(1, 2).reshape(b, s, -1)
            x = x + l.o(o)
            m = self.rms(x, l.norm2)
            x = x + l.down(F.silu(l.gate(m)) * l.up(m))
        return self.rms(x, self.norm) @ self.embed.weight.T

    def hf_state(self):
        t = {"model.embed_tokens.weight": self.embed.weight, "model.norm.weight": self.norm}
        for n, l in enumerate(self.layers):
            p = f"model.layers.{n}."
            t.update({p + "input_layernorm.weight": l.norm1,
                      p + "self_attn.q_proj.weight": l.q.weight,
                      p + "self_attn.k_proj.weight": l.k.weight,
                      p + "self_attn.v_proj.weight": l.v.weight,
                      p + "self_attn.o_proj.weight": l.o.weight,
                      p + "post_attention_layernorm.weight": l.norm2,
                      p + "mlp.gate_proj.weight": l.gate.weight,
                      p + "mlp.up_proj.weight": l.up.weight,
                      p + "mlp.down_proj.weight": l.down.weight})
        return {k: v.detach().float().contiguous() for k, v in t.items()}


def batch(rng, size):
    rows, masks = [], []
    for _ in range(size):
        prompt, answer = example(rng)
        ids = encode(prompt + answer) + [EOS]
        rows.append(ids)
        # Learn only the answer (after the prompt) and the EOS.
        masks.append([0] * len(encode(prompt)) + [1] * (len(ids) - len(encode(prompt))))
    width = max(map(len, rows))
    tokens = torch.tensor([r + [EOS] * (width - len(r)) for r in rows])
    mask = torch.tensor([m + [0] * (width - len(m)) for m in masks], dtype=torch.float)
    return tokens, mask


def greedy(model, prompt):
    ids = encode(prompt)
    with torch.no_grad():
        while len(ids) < CONFIG["max_position_embeddings"]:
            nxt = int(model(torch.tensor([ids]))[0, -1].argmax())
            if nxt == EOS:
                break
            ids.append(nxt)
    return "".join(PIECES[i] for i in ids[2:])


def write_outputs(model):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    tensors = model.hf_state()
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        data = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(OUT, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    # SentencePiece ModelProto: field 1 (pieces) of {1: piece, 2: score,
    # 3: type}; types 2 unknown, 3 control, 1 normal.
    def field(number, wire, payload):
        return bytes([number << 3 | wire]) + payload

    def message(number, body):
        return field(number, 2, bytes([len(body)]) + body)
    proto = b""
    for i, piece in enumerate(PIECES):
        kind = 2 if i == 0 else 3 if i < 3 else 1
        spelled = piece.replace(" ", "\u2581").encode()
        body = (message(1, spelled) + field(2, 5, struct.pack("<f", 0.0))
                + field(3, 0, bytes([kind])))
        proto += message(1, body)
    with open(os.path.join(OUT, "tokenizer.model"), "wb") as f:
        f.write(proto)
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "LlamaTokenizer", "add_bos_token": True}, f)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    rng = random.Random(0)
    model = Llama(CONFIG)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    steps = 2500
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 3e-3, total_steps=steps)
    for step in range(steps):
        tokens, mask = batch(rng, 64)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tokens[:, 1:].reshape(-1), reduction="none")
        loss = (loss * mask[:, 1:].reshape(-1)).sum() / mask[:, 1:].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 250 == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)
    held_out = random.Random(1)
    cases = [example(held_out) for _ in range(200)]
    correct = sum(greedy(model, p) == p + a for p, a in cases)
    print(f"greedy accuracy on 200 held-out lists: {correct / 2:.1f}%")
    write_outputs(model)


if __name__ == "__main__":
    main()
