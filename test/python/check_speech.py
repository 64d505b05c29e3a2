#!/usr/bin/env python3
"""check_speech.py LIBRECOGNIZER LIBBASE INPUTS: the Python package on a
speech recognizer (transcribe() of a file and of samples, the transcript
equal to transformers' batch_decode) and its refusals. Prints one line per
check (speech.test)."""
import sys
import wave

import numpy as np

import tfmc

recognizer_path, base_path, inputs = sys.argv[1:]
model = tfmc.load(recognizer_path)
print("sampling rate:", model.description["sampling_rate"])
expected = open(f"{inputs}/wav2vec2-ctc.text").read().rstrip("\n")
print("file transcript equals transformers':",
      model.transcribe(f"{inputs}/clip.wav") == expected)
with wave.open(f"{inputs}/clip.wav", "rb") as w:
    pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
samples = pcm.astype(np.float32) / 32768.0
print("samples transcript equals transformers':",
      model.transcribe(samples) == expected)
print("read_audio equals the samples:",
      np.array_equal(model.read_audio(f"{inputs}/clip.wav"), samples))
for label, run in [
        ("too short", lambda: model.transcribe(samples[:10])),
        ("not audio", lambda: model.transcribe(f"{inputs}/wav2vec2-ctc/vocab.json")),
        ("not a recognizer", lambda: tfmc.load(base_path).transcribe(samples))]:
    try:
        run()
        print(label + ": accepted")
    except tfmc.TfmcError as e:
        print(f"{label}: {e}")
