#!/usr/bin/env python3
"""Exports a benchmark model (a make_random_model.py directory) to ONNX for
the ONNX Runtime peer: one graph for prefill and decode alike,
    (input_ids [s], past_keys [L, t, kvh, hd], past_values) ->
    (logits of the last position [vocab], present_keys [L, t+s, ...], ...)
with s and t dynamic, as torch.onnx.export writes decoders with past
key/values. The math is torch_peer.py's, written without in-place cache
updates so that it traces.

    /usr/bin/python3 export_onnx.py MODEL_DIR OUT.onnx
"""
import math
import sys

import torch
import torch.nn.functional as F

from torch_peer import Model


class Step(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def attend(self, q, k, v, past_k, past_v, l):
        k = torch.cat([past_k[l], k], 0)
        v = torch.cat([past_v[l], v], 0)
        m = self.m
        if m.kvh != m.h:
            k = k.repeat_interleave(m.h // m.kvh, 1)
            v = v.repeat_interleave(m.h // m.kvh, 1)
        s, t = q.shape[0], k.shape[0]
        scores = torch.einsum("ihd,jhd->hij", q, k) / math.sqrt(m.hd)
        rows = torch.arange(s).unsqueeze(1) + (t - s)
        mask = torch.arange(t).unsqueeze(0) > rows
        p = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return torch.einsum("hij,jhd->ihd", p, v).reshape(s, -1)

    def rope(self, x, positions):
        m, half = self.m, self.m.hd // 2
        r = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * m.cos[positions][:, None] + r * m.sin[positions][:, None]

    def forward(self, tokens, past_k, past_v):
        m, w, s = self.m, self.m.w, tokens.shape[0]
        start = past_k.shape[1]
        positions = torch.arange(s) + start
        keys, values = [], []
        if m.gpt2:
            x = w["wte.weight"][tokens] + w["wpe.weight"][positions]
        else:
            x = w["model.embed_tokens.weight"][tokens]
        rms = lambda t, g: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5) * g
        for l in range(m.layers):
            if m.gpt2:
                p = f"h.{l}."
                a = F.layer_norm(x, (m.d,), w[p + "ln_1.weight"], w[p + "ln_1.bias"])
                q, k, v = F.linear(a, w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"]).split(m.d, -1)
                q, k, v = q.view(s, m.h, -1), k.view(s, m.h, -1), v.view(s, m.h, -1)
            else:
                p = f"model.layers.{l}."
                a = rms(x, w[p + "input_layernorm.weight"])
                q = self.rope(F.linear(a, w[p + "self_attn.q_proj.weight"]).view(s, m.h, -1), positions)
                k = self.rope(F.linear(a, w[p + "self_attn.k_proj.weight"]).view(s, m.kvh, -1), positions)
                v = F.linear(a, w[p + "self_attn.v_proj.weight"]).view(s, m.kvh, -1)
            keys.append(torch.cat([past_k[l], k], 0))
            values.append(torch.cat([past_v[l], v], 0))
            o = self.attend(q, k, v, past_k, past_v, l)
            if m.gpt2:
                x = x + F.linear(o, w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"])
                h = F.layer_norm(x, (m.d,), w[p + "ln_2.weight"], w[p + "ln_2.bias"])
                h = F.gelu(F.linear(h, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]), approximate="tanh")
                x = x + F.linear(h, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
            else:
                x = x + F.linear(o, w[p + "self_attn.o_proj.weight"])
                h = rms(x, w[p + "post_attention_layernorm.weight"])
                h = F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"])
                x = x + F.linear(h, w[p + "mlp.down_proj.weight"])
        if m.gpt2:
            x = F.layer_norm(x[-1], (m.d,), w["ln_f.weight"], w["ln_f.bias"])
            logits = F.linear(x, w["wte.weight"])
        else:
            logits = F.linear(rms(x[-1], w["model.norm.weight"]), w["lm_head.weight"])
        return logits, torch.stack(keys), torch.stack(values)


def main():
    model = Model(sys.argv[1])
    step = Step(model).eval()
    tokens = torch.tensor([1, 2, 3])
    past = torch.zeros(model.layers, 2, model.kvh, model.hd)
    with torch.no_grad():
        torch.onnx.export(
            step, (tokens, past, past.clone()), sys.argv[2],
            input_names=["input_ids", "past_keys", "past_values"],
            output_names=["logits", "present_keys", "present_values"],
            dynamic_axes={"input_ids": {0: "s"}, "past_keys": {1: "t"},
                          "past_values": {1: "t"}, "present_keys": {1: "t+s"},
                          "present_values": {1: "t+s"}},
            opset_version=14)
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()
