#!/usr/bin/env python3
"""translate() and Whisper's transcribe() through the Python package, against
the executables' output for the same sources (test/e2e/seq2seq checks
those against transformers):

    check_seq2seq.py MARIAN_LIBRARY TEXTS DECODED BEAMS2 WHISPER_LIBRARY WAV WAV_TEXT"""
import sys

import tfmc

(marian_library, texts, decoded, beams2, whisper_library, wav, wav_text,
 wav_previous_text) = sys.argv[1:]
marian = tfmc.load(marian_library)
lines = open(texts).read().splitlines()
expected = open(decoded).read().splitlines()
got = [marian.translate(line, max_new_tokens=10) for line in lines]
print("translate:", len(got), "lines equal the executable's:", got == expected)
print("beams 2 equal the executable's:",
      marian.translate(lines[0], beams=2, max_new_tokens=10) ==
      open(beams2).read().rstrip("\n"))
print("source ids:", marian.translate(marian.tokenize(lines[0], framed=True),
                                      max_new_tokens=10) == expected[0])
for label, call in [
        ("empty", lambda: marian.translate("")),
        ("beams", lambda: marian.translate(lines[0], beams=0)),
        ("not speech", lambda: marian.transcribe([0.0] * 16000))]:
    try:
        call()
        print(label, "accepted")
    except tfmc.TfmcError as e:
        print(f"{label}:", e)

whisper = tfmc.load(whisper_library)
text = whisper.transcribe(wav, max_new_tokens=6)
print("whisper from a file equals the executable's:",
      text == open(wav_text).read().rstrip("\n"))
print("from samples:",
      whisper.transcribe(whisper.read_audio(wav), max_new_tokens=6) == text)
try:
    whisper.translate("hello")
except tfmc.TfmcError as e:
    print("text to whisper:", e)
after = whisper.transcribe(wav, max_new_tokens=6, prompt="the cat sat on the mat")
print("after a prompt equals the executable's:",
      after == open(wav_previous_text).read().rstrip("\n"))

