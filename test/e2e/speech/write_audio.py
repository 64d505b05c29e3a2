#!/usr/bin/env python3
"""write_audio.py: hostile audio files for audio-limits.test (standard
library, and libsndfile through ctypes for FLAC).

    write_audio.py pcm OUT.wav RATE CHANNELS FRAMES
        16-bit WAV of a quiet ramp, at any rate and channel count
    write_audio.py float OUT.wav RATE CHANNELS FRAMES FRAME CHANNEL VALUE
        32-bit float WAV of zeros but VALUE (nan, inf, -inf) at FRAME of
        CHANNEL
    write_audio.py flac OUT.flac RATE CHANNELS SECONDS CLAIMED_SECONDS
        FLAC of SECONDS of silence whose header (STREAMINFO's total
        samples) claims CLAIMED_SECONDS: a few KB that a reader trusting
        the header would allocate gigabytes for
"""
import ctypes
import struct
import sys
import wave


def pcm(path, rate, channels, frames):
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<h", (i * 7) % 256) * channels
                               for i in range(frames)))


def float_wav(path, rate, channels, frames, frame, channel, value):
    samples = [0.0] * (frames * channels)
    samples[frame * channels + channel] = float(value)
    data = struct.pack(f"<{len(samples)}f", *samples)
    # WAVE_FORMAT_IEEE_FLOAT (3): Python's wave module writes PCM only.
    fmt = struct.pack("<HHIIHH", 3, channels, rate, rate * channels * 4,
                      channels * 4, 32)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)))
        f.write(b"WAVEfmt " + struct.pack("<I", len(fmt)) + fmt)
        f.write(b"data" + struct.pack("<I", len(data)) + data)


class SfInfo(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int),
                ("channels", ctypes.c_int), ("format", ctypes.c_int),
                ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]


def flac(path, rate, channels, seconds, claimed):
    sf = ctypes.CDLL("libsndfile.so.1")
    sf.sf_open.restype = ctypes.c_void_p
    sf.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int,
                           ctypes.POINTER(SfInfo)]
    sf.sf_writef_short.restype = ctypes.c_int64
    sf.sf_writef_short.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int64]
    sf.sf_close.argtypes = [ctypes.c_void_p]
    sfm_write, format_flac, pcm_16 = 0x20, 0x170000, 0x0002
    info = SfInfo(0, rate, channels, format_flac | pcm_16, 0, 0)
    handle = sf.sf_open(path.encode(), sfm_write, ctypes.byref(info))
    if not handle:
        sys.exit(f"libsndfile cannot write FLAC to {path}")
    silence = (ctypes.c_short * (rate * channels))()
    for _ in range(seconds):
        sf.sf_writef_short(handle, silence, rate)
    sf.sf_close(handle)
    # "fLaC", a 4-byte block header, then STREAMINFO: 10 bytes of block and
    # frame sizes, then 64 bits of rate (20), channels - 1 (3), bits per
    # sample - 1 (5) and total samples (36).
    with open(path, "r+b") as f:
        f.seek(18)
        (bits,) = struct.unpack(">Q", f.read(8))
        bits = (bits & ~((1 << 36) - 1)) | (claimed * rate)
        f.seek(18)
        f.write(struct.pack(">Q", bits))


kind, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if kind == "pcm":
    pcm(path, *map(int, args))
elif kind == "float":
    float_wav(path, *map(int, args[:5]), args[5])
elif kind == "flac":
    flac(path, *map(int, args))
else:
    sys.exit(__doc__)
