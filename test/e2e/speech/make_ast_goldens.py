#!/usr/bin/env python3
"""Writes the Audio Spectrogram Transformer fixture
(test/e2e/speech/Inputs/ast/: config.json, model.safetensors,
preprocessor_config.json; tiny random weights: 16 mel bins x 64 frames in
8x8 patches every 4, 5 labels) and its goldens with transformers 4.40's
classes (../shared/reference; ASTFeatureExtractor's NumPy path, as the
reference has no torchaudio):

- ast.features.bin: ASTFeatureExtractor's input_values of Inputs/clip.wav
  (58 frames, zero-padded to 64), transposed to tfmc's [mel bins, frames];
- ast-long.features.bin: the same of Inputs/long.wav (1.2 s, 118 frames,
  cut to 64);
- ast.logits.bin: ASTForAudioClassification's logits of clip.wav [5].

Regenerate (after make_speech_goldens.py, which writes clip.wav) with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/speech/make_ast_goldens.py
"""
import os
import wave

import numpy as np
import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")


def read_wav(path):
    with wave.open(path, "rb") as w:
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return data.astype(np.float32) / 32768.0


def main():
    rng = np.random.default_rng(9)
    t = np.arange(19200) / 16000.0
    tone = 0.4 * np.sin(2 * np.pi * (300 + 200 * t) * t) + \
        0.05 * rng.standard_normal(t.size)
    with wave.open(os.path.join(OUT, "long.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.round(tone * 20000).astype("<i2").tobytes())

    config = tf.ASTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, patch_size=8, frequency_stride=4,
        time_stride=4, num_mel_bins=16, max_length=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        architectures=["ASTForAudioClassification"],
        id2label={i: name for i, name in enumerate(
            ["Speech", "Music", "Dog", "Siren", "Silence"])})
    model = tf.ASTForAudioClassification(config).eval()
    g = torch.Generator().manual_seed(21)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            scale = "norm" in name and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if scale else 0.3 * noise)
    directory = os.path.join(OUT, "ast")
    model.save_pretrained(directory, safe_serialization=True)
    extractor = tf.ASTFeatureExtractor(num_mel_bins=16, max_length=64)
    extractor.save_pretrained(directory)

    for name, wav in [("ast", "clip.wav"), ("ast-long", "long.wav")]:
        values = extractor(read_wav(os.path.join(OUT, wav)),
                           sampling_rate=16000,
                           return_tensors="pt").input_values
        values[0].T.numpy().astype("<f4").tofile(
            os.path.join(OUT, name + ".features.bin"))
        print(name, tuple(values.shape))
        if name == "ast":
            with torch.no_grad():
                logits = model(values).logits[0]
            logits.numpy().astype("<f4").tofile(
                os.path.join(OUT, "ast.logits.bin"))
            print("logits", logits.tolist())


if __name__ == "__main__":
    main()
