#!/usr/bin/env python3
"""bench/export_onnx_seq2seq.py MODEL_DIR OUT_PREFIX: exports an
encoder-decoder (MarianMTModel or WhisperForConditionalGeneration) for the
ONNX Runtime peer of compare_seq2seq.py, as optimum splits such models:

- OUT_PREFIX.encoder.onnx: source ids [1, S] (or features [1, 80, frames])
  -> encoder output [1, S, d];
- OUT_PREFIX.decoder-init.onnx: decoder ids [B, 1], encoder output [B, S, d]
  -> logits [B, 1, V], then per layer its self-attention K, V [B, h, 1, dh]
  and cross-attention K, V [B, h, S, dh];
- OUT_PREFIX.decoder-past.onnx: decoder ids [B, 1], encoder output, then
  per layer the self K, V so far [B, h, t, dh] and the cross K, V -> logits
  and the self K, V [B, h, t + 1, dh].

Run with Debian's PyTorch and the reference transformers
(../shared/reference), opset 14.
"""
import sys

import torch
import transformers as tf


class DecoderStep(torch.nn.Module):
    """One decoder step; `init`: without a past (it computes the cross K/V)."""

    def __init__(self, model, init):
        super().__init__()
        self.model, self.init = model, init
        self.layers = model.config.decoder_layers

    def forward(self, ids, hidden, *past):
        past_key_values = None
        if not self.init:
            past_key_values = tuple(tuple(past[4 * i:4 * i + 4])
                                    for i in range(self.layers))
        out = self.model(encoder_outputs=(hidden,), decoder_input_ids=ids,
                         past_key_values=past_key_values, use_cache=True)
        flat = []
        for layer in out.past_key_values:
            flat += list(layer) if self.init else list(layer[:2])
        return (out.logits, *flat)


def main():
    directory, prefix = sys.argv[1:3]
    config = tf.AutoConfig.from_pretrained(directory)
    config._attn_implementation = "eager"
    whisper = config.model_type == "whisper"
    cls = tf.WhisperForConditionalGeneration if whisper else tf.MarianMTModel
    model = cls.from_pretrained(directory, config=config).eval()
    d, heads = config.d_model, config.decoder_attention_heads
    layers, dh = config.decoder_layers, d // heads
    if whisper:
        source = torch.zeros(1, config.num_mel_bins, 2 * config.max_source_positions)
        source_name, source_axes = "input_features", {}
    else:
        source = torch.arange(100, 164).unsqueeze(0)
        source_name, source_axes = "input_ids", {"input_ids": {1: "source"}}
    encoder = model.get_encoder()
    with torch.no_grad():
        hidden = encoder(source)[0]
    torch.onnx.export(encoder, (source,), prefix + ".encoder.onnx",
                      input_names=[source_name], output_names=["hidden"],
                      dynamic_axes={**source_axes, "hidden": {1: "source"}},
                      opset_version=14)
    S = hidden.shape[1]
    ids = torch.tensor([[config.decoder_start_token_id]] * 2)
    hidden2 = hidden.expand(2, -1, -1).contiguous()
    batch = {0: "batch"}
    self_names = [f"{kind}{i}" for i in range(layers) for kind in ("k", "v")]
    cross_names = [f"cross_{kind}{i}" for i in range(layers) for kind in ("k", "v")]
    init_outputs = ["logits"] + [n for i in range(layers) for n in
                                 (f"k{i}", f"v{i}", f"cross_k{i}", f"cross_v{i}")]
    axes = {"ids": batch, "hidden": {0: "batch", 1: "source"}, "logits": batch}
    axes.update({n: {0: "batch", 2: "past"} for n in self_names})
    axes.update({n: {0: "batch", 2: "source"} for n in cross_names})
    torch.onnx.export(DecoderStep(model, True), (ids, hidden2),
                      prefix + ".decoder-init.onnx", input_names=["ids", "hidden"],
                      output_names=init_outputs, dynamic_axes=axes,
                      opset_version=14)
    past = []
    for i in range(layers):
        past += [torch.zeros(2, heads, 3, dh), torch.zeros(2, heads, 3, dh),
                 torch.zeros(2, heads, S, dh), torch.zeros(2, heads, S, dh)]
    past_inputs = [n for i in range(layers) for n in
                   (f"past_k{i}", f"past_v{i}", f"cross_k{i}", f"cross_v{i}")]
    axes = {"ids": batch, "hidden": {0: "batch", 1: "source"}, "logits": batch}
    axes.update({n: {0: "batch", 2: "past"} for n in past_inputs if n.startswith("past")})
    axes.update({n: {0: "batch", 2: "source"} for n in cross_names})
    axes.update({n: {0: "batch", 2: "past"} for n in self_names})
    torch.onnx.export(DecoderStep(model, False), (ids, hidden2, *past),
                      prefix + ".decoder-past.onnx",
                      input_names=["ids", "hidden"] + past_inputs,
                      output_names=["logits"] + self_names, dynamic_axes=axes,
                      opset_version=14)


if __name__ == "__main__":
    main()
