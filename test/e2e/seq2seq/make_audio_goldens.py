#!/usr/bin/env python3
"""Writes the audio fixtures (test/e2e/seq2seq/Inputs/audio/*.wav, 16-bit
PCM) and the log-mel features WhisperFeatureExtractor (transformers 4.40,
../shared/reference; chunk_length 1: 100 frames of 80 mel bins, as the
whisper fixture's preprocessor_config.json) computes from their samples
(int16 / 32768), little-endian f32 [80, 100] as <name>.features.bin:

- tones: 440 Hz and 1850 Hz, 1 s; noise: uniform white noise, 0.7 s
  (padded with silence to the chunk); silence: 1 s of zeros; clipped: a
  tone at 3x full scale, clipped; long: 1.5 s of tones, cut to the chunk;
- stereo: tones on the left, noise on the right (features of their mean);
- tones-8k: the tones at 8 kHz, which the runtime resamples to 16 kHz
  (features of the 16 kHz tones: the resampler differs from any
  reference's, so the test allows a looser tolerance);
- bad inputs: not-audio.wav (text), truncated.wav (a header promising
  more samples than follow, cut mid-file).

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/seq2seq/make_audio_goldens.py
"""
import os
import wave

import numpy as np
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs", "audio")
RATE = 16000


def tones(seconds, rate=RATE, scale=1.0):
    t = np.arange(int(seconds * rate)) / rate
    return scale * (0.4 * np.sin(2 * np.pi * 440 * t) +
                    0.2 * np.sin(2 * np.pi * 1850 * t))


def to_int16(x):
    return np.clip(np.round(x * 32767), -32768, 32767).astype("<i2")


def write_wav(name, channels, rate=RATE):
    """Writes int16 `channels` (a list of arrays) and returns the mono float
    samples a reader sees: the channels' mean of int16 / 32768."""
    data = np.stack([to_int16(c) for c in channels], axis=1)
    with wave.open(os.path.join(OUT, name + ".wav"), "wb") as f:
        f.setnchannels(len(channels))
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(data.tobytes())
    return (data.astype(np.float64) / 32768.0).mean(axis=1).astype(np.float32)


def main():
    os.makedirs(OUT, exist_ok=True)
    extractor = tf.WhisperFeatureExtractor(feature_size=80, chunk_length=1)
    rng = np.random.default_rng(3)
    noise = rng.uniform(-0.5, 0.5, int(0.7 * RATE))
    signals = {
        "tones": write_wav("tones", [tones(1.0)]),
        "noise": write_wav("noise", [noise]),
        "silence": write_wav("silence", [np.zeros(RATE)]),
        "clipped": write_wav("clipped", [tones(1.0, scale=3.0)]),
        "long": write_wav("long", [tones(1.5)]),
        "stereo": write_wav("stereo", [tones(0.7), noise]),
    }
    write_wav("tones-8k", [tones(1.0, rate=8000)], rate=8000)
    signals["tones-8k"] = signals["tones"]
    for name, samples in signals.items():
        features = extractor(samples, sampling_rate=RATE,
                             return_tensors="np").input_features[0]
        features.astype("<f4").tofile(os.path.join(OUT, name + ".features.bin"))
        print(name, features.shape, features.min(), features.max())
    with open(os.path.join(OUT, "not-audio.wav"), "w") as f:
        f.write("this is not a WAV file\n")
    with open(os.path.join(OUT, "tones.wav"), "rb") as f:
        whole = f.read()
    with open(os.path.join(OUT, "truncated.wav"), "wb") as f:
        f.write(whole[:len(whole) // 2])


if __name__ == "__main__":
    main()
