#!/usr/bin/env python3
"""PEFT LoRA adapters for a Hugging Face decoder folder, and the folders
PEFT's merge_and_unload would save, merged here with NumPy (no torch, no
PEFT): W + scale * alpha / r * B @ A (alpha / sqrt(r) with use_rslora), an
embedding's update transposed, modules_to_save replacing the base's
tensors, the sum rounded to the base tensor's dtype.

    make_lora_fixture.py BASE OUT GPT2

writes, for each case below, OUT/CASE/adapter (adapter_config.json and
adapter_model.safetensors, under PEFT's saved names) and OUT/CASE/merged
(BASE's files, its model.safetensors merged), and OUT/broken/NAME: adapters
tfmc must refuse (OUT/tied-base: BASE saving its tied head too). Cases:
  plain   r 4, alpha 16: q_proj, v_proj and down_proj of every layer,
          merged at scale 0.5 (the test gives --lora DIR:0.5);
  rslora  r 8, alpha 4, use_rslora, alpha_pattern {o_proj: 16}: k_proj,
          o_proj, gate_proj, up_proj, the embeddings (lora_embedding_A/B),
          and model.norm as a saved module;
  linear  r 8, alpha 4, use_rslora, alpha_pattern {o_proj: 16}: k_proj,
          o_proj, gate_proj and up_proj of every layer, A and B saved as
          bf16 (the merge sums the rounded values): with plain, every
          projection kind of a layer, for adapters applied at run time;
  phi3    r 4, alpha 8 on test/e2e/families/Inputs/phi3 (beside GPT2): its
          fused qkv_proj and gate_up_proj, o_proj and down_proj, as
          PEFT saves a Phi-3 adapter (the model splits the fused ones);
  bf16    the plain adapter on BASE's weights stored as bf16 (OUT/bf16/base);
  gpt2    fan_in_fan_out on GPT2's Conv1D weights (stored [in, out]) c_attn
          and c_fc, under the head model's names ("transformer.h.0...")
          where the checkpoint has the base model's ("h.0...").
"""
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from checkpoint import (Stored, as_bf16, as_f32, read_safetensors,  # noqa: E402
                        stored_values, write_safetensors)

WRAPPED = "base_model.model."


def adapter_config(r, alpha, targets, **extra):
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r,
              "lora_alpha": alpha, "lora_dropout": 0.0, "bias": "none",
              "target_modules": targets, "fan_in_fan_out": False,
              "use_rslora": False, "modules_to_save": None,
              "rank_pattern": {}, "alpha_pattern": {}}
    config.update(extra)
    return config


def copy_folder(base, out, tensors):
    """BASE's files in `out`, with `tensors` as its model.safetensors."""
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(base):
        if name != "model.safetensors":
            shutil.copy(os.path.join(base, name), out)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)


def stored_like(base, values):
    return as_bf16(values) if base.dtype == "BF16" else as_f32(values)


class Adapter:
    """An adapter being made: its saved tensors, and the base merged."""

    def __init__(self, rng, base_tensors, config, scale, saved_bf16=False):
        self.rng, self.config, self.scale = rng, config, scale
        self.saved, self.merged = {}, dict(base_tensors)
        self.saved_bf16 = saved_bf16

    def factor(self, module, r):
        alpha = self.config["alpha_pattern"].get(module.split(".")[-1],
                                                 self.config["lora_alpha"])
        root = np.sqrt(r) if self.config["use_rslora"] else r
        return self.scale * alpha / root

    def low_rank(self, module, r, inner, outer, names, transposed,
                 wrapped_as=None):
        """A [r, inner] and B [outer, r] saved under `names` (PEFT's
        suffixes for A and B), the base updated by B @ A, transposed where
        the base is stored [inner, outer]."""
        base = self.merged[module + ".weight"]
        a = self.rng.normal(0, 0.2, (r, inner)).astype(np.float32)
        b = self.rng.normal(0, 0.2, (outer, r)).astype(np.float32)
        saved_as = WRAPPED + (wrapped_as or module) + "."
        store = as_bf16 if self.saved_bf16 else as_f32
        self.saved[saved_as + names[0]] = store(a)
        self.saved[saved_as + names[1]] = store(b)
        a = stored_values(self.saved[saved_as + names[0]])
        b = stored_values(self.saved[saved_as + names[1]])
        delta = b.astype(np.float64) @ a.astype(np.float64)
        self.merged[module + ".weight"] = stored_like(
            base, stored_values(base)
            + self.factor(module, r) * (delta.T if transposed else delta))

    def linear(self, module, r):
        outer, inner = self.merged[module + ".weight"].data.shape
        self.low_rank(module, r, inner, outer,
                      ("lora_A.weight", "lora_B.weight"), False)

    def embedding(self, module, r):
        vocab, dim = self.merged[module + ".weight"].data.shape
        self.low_rank(module, r, vocab, dim,
                      ("lora_embedding_A", "lora_embedding_B"), True)

    def conv1d(self, module, r, wrapped_as):
        """A GPT-2 Conv1D weight, stored [in, out] (fan_in_fan_out)."""
        inner, outer = self.merged[module + ".weight"].data.shape
        self.low_rank(module, r, inner, outer,
                      ("lora_A.weight", "lora_B.weight"), True, wrapped_as)

    def save_module(self, name):
        base = self.merged[name]
        values = stored_values(base) + self.rng.normal(0, 0.1, base.data.shape)
        self.saved[WRAPPED + name] = stored_like(base, values)
        self.merged[name] = self.saved[WRAPPED + name]

    def write(self, out, base_folder):
        os.makedirs(os.path.join(out, "adapter"), exist_ok=True)
        with open(os.path.join(out, "adapter", "adapter_config.json"), "w") as f:
            json.dump(self.config, f, indent=2)
        write_safetensors(
            os.path.join(out, "adapter", "adapter_model.safetensors"),
            self.saved)
        copy_folder(base_folder, os.path.join(out, "merged"), self.merged)


def layer_count(tensors):
    return 1 + max(int(name.split(".")[2]) for name in tensors
                   if name.startswith("model.layers."))


def plain(rng, tensors, base, out):
    config = adapter_config(4, 16, ["q_proj", "v_proj", "down_proj"])
    adapter = Adapter(rng, tensors, config, scale=0.5)
    for layer in range(layer_count(tensors)):
        prefix = f"model.layers.{layer}."
        adapter.linear(prefix + "self_attn.q_proj", 4)
        adapter.linear(prefix + "self_attn.v_proj", 4)
        adapter.linear(prefix + "mlp.down_proj", 4)
    adapter.write(out, base)
    return adapter


def rslora(rng, tensors, base, out):
    config = adapter_config(8, 4, ["k_proj", "o_proj", "gate_proj", "up_proj",
                                   "embed_tokens"],
                            use_rslora=True, alpha_pattern={"o_proj": 16},
                            modules_to_save=["norm"])
    adapter = Adapter(rng, tensors, config, scale=1.0)
    for layer in range(layer_count(tensors)):
        prefix = f"model.layers.{layer}."
        for module in ("self_attn.k_proj", "self_attn.o_proj",
                       "mlp.gate_proj", "mlp.up_proj"):
            adapter.linear(prefix + module, 8)
    adapter.embedding("model.embed_tokens", 8)
    adapter.save_module("model.norm.weight")
    adapter.write(out, base)


def every_layer(adapter, tensors, modules, r):
    """`modules` ("self_attn.k_proj", ...) of every layer adapted at rank r."""
    for layer in range(layer_count(tensors)):
        for module in modules:
            adapter.linear(f"model.layers.{layer}.{module}", r)


def linear(rng, tensors, base, out):
    config = adapter_config(8, 4, ["k_proj", "o_proj", "gate_proj", "up_proj"],
                            use_rslora=True, alpha_pattern={"o_proj": 16})
    adapter = Adapter(rng, tensors, config, scale=1.0, saved_bf16=True)
    every_layer(adapter, tensors, ("self_attn.k_proj", "self_attn.o_proj",
                                   "mlp.gate_proj", "mlp.up_proj"), 8)
    adapter.write(out, base)


def phi3(rng, base, out):
    tensors = read_safetensors(os.path.join(base, "model.safetensors"))
    config = adapter_config(4, 8, ["qkv_proj", "o_proj", "gate_up_proj",
                                   "down_proj"])
    adapter = Adapter(rng, tensors, config, scale=1.0)
    every_layer(adapter, tensors, ("self_attn.qkv_proj", "self_attn.o_proj",
                                   "mlp.gate_up_proj", "mlp.down_proj"), 4)
    adapter.write(out, base)


def gpt2(rng, base, out):
    tensors = read_safetensors(os.path.join(base, "model.safetensors"))
    config = adapter_config(2, 4, ["c_attn", "c_fc"], fan_in_fan_out=True)
    adapter = Adapter(rng, tensors, config, scale=1.0)
    layers = 1 + max(int(name.split(".")[1]) for name in tensors
                     if name.startswith("h."))
    for layer in range(layers):
        for module in (f"h.{layer}.attn.c_attn", f"h.{layer}.mlp.c_fc"):
            adapter.conv1d(module, 2, "transformer." + module)
    adapter.write(out, base)


def broken(plain_adapter, out):
    """Adapters tfmc refuses, each a change of the plain one."""
    def write(name, config=None, tensors=None, weights_file=True):
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "adapter_config.json"), "w") as f:
            json.dump(config if config is not None else plain_adapter.config, f)
        if weights_file:
            write_safetensors(os.path.join(folder, "adapter_model.safetensors"),
                              tensors if tensors is not None
                              else plain_adapter.saved)
        return folder

    config = plain_adapter.config
    write("dora", dict(config, use_dora=True))
    write("bias", dict(config, bias="all"))
    write("prefix", dict(config, peft_type="PREFIX_TUNING"))
    write("no-weights", weights_file=False)
    first = WRAPPED + "model.layers.0.self_attn.q_proj."
    tensors = dict(plain_adapter.saved)
    del tensors[first + "lora_B.weight"]
    write("half-pair", tensors=tensors)
    tensors = dict(plain_adapter.saved)
    a = tensors[first + "lora_A.weight"].data
    tensors[first + "lora_A.weight"] = as_f32(a[:, :-1])
    write("bad-shape", tensors=tensors)
    tensors = dict(plain_adapter.saved)
    tensors[WRAPPED + "model.layers.0.self_attn.qkv_proj.lora_A.weight"] = \
        tensors[first + "lora_A.weight"]
    tensors[WRAPPED + "model.layers.0.self_attn.qkv_proj.lora_B.weight"] = \
        tensors[first + "lora_B.weight"]
    write("no-base", tensors=tensors)
    tensors = {WRAPPED + "lm_head.weight":
               as_f32(np.zeros(plain_adapter.merged["model.embed_tokens.weight"]
                               .data.shape, np.float32))}
    write("tied-head", tensors=tensors)
    tensors = {"model.layers.0.self_attn.q_proj.lora_A.weight":
               plain_adapter.saved[first + "lora_A.weight"]}
    write("unwrapped", tensors=tensors)
    with open(os.path.join(write("truncated"), "adapter_model.safetensors"),
              "r+b") as f:
        f.truncate(1000)


def main():
    base, out, gpt2_base = sys.argv[1], sys.argv[2], sys.argv[3]
    tensors = read_safetensors(os.path.join(base, "model.safetensors"))
    rng = np.random.default_rng(7)
    adapter = plain(rng, tensors, base, os.path.join(out, "plain"))
    rslora(rng, tensors, base, os.path.join(out, "rslora"))
    linear(rng, tensors, base, os.path.join(out, "linear"))
    # The same adapter on bf16 weights: the merge rounds to bf16.
    bf16_tensors = {name: as_bf16(stored_values(t)) if t.data.ndim == 2 else t
                    for name, t in tensors.items()}
    bf16_base = os.path.join(out, "bf16", "base")
    copy_folder(base, bf16_base, bf16_tensors)
    bf16 = Adapter(rng, bf16_tensors, adapter.config, scale=0.5)
    bf16.saved = adapter.saved
    for name, stored in adapter.saved.items():
        if name.endswith(".lora_A.weight"):
            module = name[len(WRAPPED):-len(".lora_A.weight")]
            a = stored.data.astype(np.float64)
            b = adapter.saved[WRAPPED + module + ".lora_B.weight"].data
            weight = bf16.merged[module + ".weight"]
            bf16.merged[module + ".weight"] = as_bf16(
                stored_values(weight) + bf16.factor(module, 4) * (b @ a))
    bf16.write(os.path.join(out, "bf16"), bf16_base)
    # A tied model that saves its head anyway (as some checkpoints do),
    # for the adapter that would replace the head it does not read.
    tied = dict(tensors, **{"lm_head.weight":
                            tensors["model.embed_tokens.weight"]})
    copy_folder(base, os.path.join(out, "tied-base"), tied)
    gpt2(rng, gpt2_base, os.path.join(out, "gpt2"))
    phi3(rng, os.path.join(HERE, "..", "families", "Inputs", "phi3"),
         os.path.join(out, "phi3"))
    broken(adapter, os.path.join(out, "broken"))


if __name__ == "__main__":
    main()
