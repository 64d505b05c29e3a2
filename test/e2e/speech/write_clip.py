#!/usr/bin/env python3
"""write_clip.py OUT.wav SAMPLES: a 16 kHz, 16-bit mono WAV of SAMPLES
samples (a quiet ramp), for the speech tests' length limits."""
import sys
import wave

path, count = sys.argv[1], int(sys.argv[2])
with wave.open(path, "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(16000)
    w.writeframes(bytes((i * 7) & 0xFF if k == 0 else 0
                        for i in range(count) for k in range(2)))
