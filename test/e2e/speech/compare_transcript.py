#!/usr/bin/env python3
"""compare_transcript.py GOLDEN.json TRANSCRIPT.json

Checks tfmc's verbose_json transcript against a long-form golden of
transformers 4.40 (make_whisper_longform_goldens.py): the language, and
segment by segment the tokens (equal), start and end (within 0.02 s), the
window's temperature (equal), average log-probability (1e-3), compression
ratio (1e-6) and no-speech probability (1e-4, where the golden has one);
where the golden has words, word by word the text (equal) and the start
and end (within 0.02 s). Prints "OK: N segments" (and ", M words") or what
differs first, and fails then.
"""
import json
import sys

LANGUAGES = {"en": "english", "de": "german", "fr": "french"}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    golden = json.load(open(sys.argv[1]))
    ours = json.load(open(sys.argv[2]))
    language = LANGUAGES[golden["language"].strip("<|>")]
    if ours["language"] != language:
        fail(f"language {ours['language']!r}, expected {language!r}")
    want, got = golden["segments"], ours["segments"]
    for i, (w, g) in enumerate(zip(want, got)):
        if g["tokens"] != w["tokens"]:
            fail(f"segment {i}: tokens {g['tokens']}, expected {w['tokens']}")
        for key, tolerance in (("start", 0.02), ("end", 0.02),
                               ("temperature", 1e-6), ("avg_logprob", 1e-3),
                               ("compression_ratio", 1e-6),
                               ("no_speech_prob", 1e-4)):
            if w[key] is not None and abs(g[key] - w[key]) > tolerance:
                fail(f"segment {i}: {key} {g[key]}, expected {w[key]}")
    if len(got) != len(want):
        fail(f"{len(got)} segments, expected {len(want)}")
    segments = len(got)
    if "words" not in golden:
        print(f"OK: {segments} segments")
        return
    want, got = golden["words"], ours.get("words", [])
    for i, (w, g) in enumerate(zip(want, got)):
        if g["word"] != w["word"]:
            fail(f"word {i}: {g['word']!r}, expected {w['word']!r}")
        for key in ("start", "end"):
            if abs(g[key] - w[key]) > 0.02 + 1e-9:
                fail(f"word {i} {w['word']!r}: {key} {g[key]}, expected "
                     f"{w[key]}")
    if len(got) != len(want):
        fail(f"{len(got)} words, expected {len(want)}")
    print(f"OK: {segments} segments, {len(got)} words")


if __name__ == "__main__":
    main()
