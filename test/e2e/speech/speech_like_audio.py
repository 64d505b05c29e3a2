#!/usr/bin/env python3
"""speech_like_audio.py OUT.wav SECONDS SEED [SILENCE_START:SILENCE_END ...]

Writes 16-bit mono WAV at 16 kHz that a speech recognizer's windows see as
speech: "words" of 0.15-0.5 s (a wavering fundamental of 110-230 Hz and
eight harmonics under a raised-sine envelope) in "sentences" of 1.5-6 s,
pauses of 0.4-2.5 s between them, the given stretches silent, and a faint
noise floor throughout. Everything comes from numpy's legacy RandomState
(a frozen stream) and float64 libm, so a seed gives the same samples on
every machine: whisper-long.test writes its audio with this script rather
than keeping megabytes of it, and make_whisper_longform_goldens.py wrote
the goldens from the same files.
"""
import sys
import wave

import numpy as np

RATE = 16000


def speech_like(seconds, seed, silences=()):
    rng = np.random.RandomState(seed)
    out = np.zeros(int(seconds * RATE), np.float64)
    t = 0.3
    while t < seconds - 0.5:
        quiet = [b for a, b in silences if a <= t < b]
        if quiet:
            t = quiet[0]
            continue
        end = min(t + rng.uniform(1.5, 6.0), seconds - 0.2)
        while t < end:
            word = rng.uniform(0.15, 0.5)
            n, start = int(word * RATE), int(t * RATE)
            if start + n > len(out):
                break
            k = np.arange(n) / RATE
            f0 = rng.uniform(110, 230) * (
                1 + 0.1 * np.sin(2 * np.pi * rng.uniform(2, 5) * k))
            phase = 2 * np.pi * np.cumsum(f0) / RATE
            voice = sum(rng.uniform(0.2, 1.0) / h * np.sin(h * phase)
                        for h in range(1, 9))
            envelope = np.sin(np.pi * np.arange(n) / n) ** 2
            out[start:start + n] += 0.25 * envelope * voice
            t += word + rng.uniform(0.03, 0.15)
        t += rng.uniform(0.4, 2.5)
    out += 0.002 * rng.standard_normal(len(out))
    return np.clip(out, -1, 1)


def pcm16(samples):
    return np.round(samples * 32767).astype("<i2")


def write(path, seconds, seed, silences=()):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm16(speech_like(seconds, seed, silences)).tobytes())


if __name__ == "__main__":
    spans = [tuple(float(x) for x in s.split(":")) for s in sys.argv[4:]]
    write(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), spans)
