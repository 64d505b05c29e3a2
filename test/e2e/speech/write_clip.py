#!/usr/bin/env python3
"""write_clip.py OUT.wav SAMPLES [RATE]: a 16-bit mono WAV of SAMPLES
samples (a quiet ramp) at RATE Hz (16000 by default), for the speech
tests' length limits."""
import sys
import wave

path, count = sys.argv[1], int(sys.argv[2])
rate = int(sys.argv[3]) if len(sys.argv) > 3 else 16000
with wave.open(path, "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(rate)
    w.writeframes(bytes((i * 7) & 0xFF if k == 0 else 0
                        for i in range(count) for k in range(2)))
