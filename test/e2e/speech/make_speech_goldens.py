#!/usr/bin/env python3
"""Writes the waveform speech fixtures (test/e2e/speech/Inputs/<name>/:
config.json, model.safetensors, preprocessor_config.json and, for the CTC
heads, vocab.json and tokenizer_config.json; tiny random weights) and
their goldens with transformers 4.40's classes (../shared/reference):

- wav2vec2-ctc: Wav2Vec2ForCTC as wav2vec2-base-960h is shaped: the
  first convolution group-normed, post-norm blocks, no convolution bias,
  an even positional kernel, LibriSpeech's 32-character vocabulary;
- hubert-ctc: HubertForCTC as hubert-large-ls960-ft is shaped: every
  convolution layer-normed with a bias, pre-norm blocks
  (do_stable_layer_norm), an odd positional kernel, a lowercasing
  tokenizer; its positional convolution saved under torch 2's
  weight-norm names (parametrizations.weight.original0/1);
- wav2vec2-base: Wav2Vec2Model (hidden states), input not normalized.

Audio: Inputs/clip.wav, 0.6 s of 16-bit mono at 16 kHz (tones and noise
from a seed), and clip-8k.wav, the same at 8 kHz. Goldens, little-endian
f32: <name>.logits.bin ([frames, 32]) or <name>.hidden.bin ([frames, 32])
of clip.wav read as libsndfile reads it (int16 / 32768) through the
model's feature extractor; <name>.text: the processor's batch_decode of
the logits' argmax.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/speech/make_speech_goldens.py
"""
import json
import os
import wave

import numpy as np
import torch
import transformers as tf
from safetensors.torch import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
# LibriSpeech's characters, as wav2vec2-base-960h's vocab.json numbers them.
VOCAB = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4}
VOCAB.update({c: 5 + i for i, c in enumerate("ETAONIHSRDLUMWCFGYPBVK'XJQZ")})
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=48, conv_dim=[16, 16, 16],
             conv_kernel=[10, 3, 2], conv_stride=[5, 2, 2],
             hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
             feat_proj_dropout=0.0, layerdrop=0.0, vocab_size=32,
             pad_token_id=0, bos_token_id=1, eos_token_id=2)


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            scale = ("norm" in name and name.endswith("weight")) or \
                name.endswith("weight_g")
            p.copy_(1 + 0.2 * noise if scale else 0.3 * noise)


def write_wav(path, samples, rate):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


def read_wav(path):
    with wave.open(path, "rb") as w:
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return data.astype(np.float32) / 32768.0


def audio():
    rng = np.random.default_rng(5)
    t = np.arange(9600) / 16000.0
    signal = (0.3 * np.sin(2 * np.pi * 220 * t) +
              0.2 * np.sin(2 * np.pi * 1250 * t + 1.0) * np.sin(2 * np.pi * 3 * t) +
              0.1 * rng.standard_normal(t.size))
    pcm = np.round(np.clip(signal, -1, 1) * 20000)
    write_wav(os.path.join(OUT, "clip.wav"), pcm, 16000)
    write_wav(os.path.join(OUT, "clip-8k.wav"), pcm[::2], 8000)
    return read_wav(os.path.join(OUT, "clip.wav"))


def save(name, model, seed, normalize, tokenizer=None):
    randomize(model, seed)
    directory = os.path.join(OUT, name)
    model.eval().save_pretrained(directory, safe_serialization=True)
    extractor = tf.Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16000, padding_value=0.0,
        do_normalize=normalize, return_attention_mask=False)
    extractor.save_pretrained(directory)
    if tokenizer is not None:
        with open(os.path.join(directory, "vocab.json"), "w") as f:
            json.dump(VOCAB, f)
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer, f, indent=2)
    return model, extractor, directory


def write(name, tensor):
    tensor.detach().numpy().astype("<f4").tofile(os.path.join(OUT, name))
    print(name, tuple(tensor.shape))


def transcribe(name, model, extractor, directory, samples):
    inputs = extractor(samples, sampling_rate=16000, return_tensors="pt")
    with torch.no_grad():
        logits = model(inputs.input_values).logits[0]
    write(name + ".logits.bin", logits)
    tokenizer = tf.Wav2Vec2CTCTokenizer.from_pretrained(directory)
    ids = logits.argmax(-1)
    top = logits.topk(2, -1).values
    print(name, "smallest argmax margin", float((top[:, 0] - top[:, 1]).min()))
    text = tokenizer.batch_decode(ids[None])[0]
    with open(os.path.join(OUT, name + ".text"), "w") as f:
        f.write(text + "\n")
    print(name, repr(text))


def main():
    os.makedirs(OUT, exist_ok=True)
    samples = audio()
    tokenizer = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
                 "unk_token": "<unk>", "word_delimiter_token": "|",
                 "do_lower_case": False,
                 "tokenizer_class": "Wav2Vec2CTCTokenizer"}

    config = tf.Wav2Vec2Config(
        **SMALL, feat_extract_norm="group", do_stable_layer_norm=False,
        conv_bias=False, num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4, architectures=["Wav2Vec2ForCTC"])
    model, extractor, directory = save(
        "wav2vec2-ctc", tf.Wav2Vec2ForCTC(config), 11, True, tokenizer)
    transcribe("wav2vec2-ctc", model, extractor, directory, samples)

    config = tf.HubertConfig(
        **SMALL, feat_extract_norm="layer", do_stable_layer_norm=True,
        conv_bias=True, num_conv_pos_embeddings=15,
        num_conv_pos_embedding_groups=2, feat_proj_layer_norm=True,
        architectures=["HubertForCTC"])
    model, extractor, directory = save(
        "hubert-ctc", tf.HubertForCTC(config), 12, True,
        dict(tokenizer, do_lower_case=True))
    transcribe("hubert-ctc", model, extractor, directory, samples)
    # torch 2's weight-norm names for the positional convolution.
    path = os.path.join(directory, "model.safetensors")
    tensors = load_file(path)
    conv = "hubert.encoder.pos_conv_embed.conv."
    tensors[conv + "parametrizations.weight.original0"] = tensors.pop(conv + "weight_g")
    tensors[conv + "parametrizations.weight.original1"] = tensors.pop(conv + "weight_v")
    save_file(tensors, path, metadata={"format": "pt"})

    config = tf.Wav2Vec2Config(
        **SMALL, feat_extract_norm="group", do_stable_layer_norm=False,
        conv_bias=False, num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4, architectures=["Wav2Vec2Model"])
    model, extractor, _ = save("wav2vec2-base", tf.Wav2Vec2Model(config), 13,
                               False)
    inputs = extractor(samples, sampling_rate=16000, return_tensors="pt")
    with torch.no_grad():
        write("wav2vec2-base.hidden.bin",
              model(inputs.input_values).last_hidden_state[0])


if __name__ == "__main__":
    main()
