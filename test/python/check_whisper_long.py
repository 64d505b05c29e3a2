#!/usr/bin/env python3
"""check_whisper_long.py LIBWHISPER AUDIO.wav OUT.json WORDS.json: the Python
package's long-form transcribe() (tfm_whisper_transcribe through ctypes):
the verbose_json dicts of timestamps="segment" and "word" written to
OUT.json and WORDS.json for compare_transcript.py, the text alone without
timestamps, and the refusals. Prints one line per check
(whisper-long.test)."""
import json
import sys

import tfmc

library, audio, out, words = sys.argv[1:]
model = tfmc.load(library)
result = model.transcribe(audio, timestamps="segment", temperature=0.0)
json.dump(result, open(out, "w"))
print("keys:", sorted(result))
print("text alone equals the dict's:",
      model.transcribe(audio, temperature=0.0) == result["text"])
samples = model.read_audio(audio, max_seconds=3600)
print("seconds read:", len(samples) / 16000)
print("samples give the same segments:",
      model.transcribe(samples, timestamps="segment",
                       temperature=0.0)["segments"] == result["segments"])
worded = model.transcribe(audio, timestamps="word", temperature=0.0)
json.dump(worded, open(words, "w"))
print("word keys:", sorted(worded))
print("words' segments are the same:", worded["segments"] == result["segments"])
for label, run in [
        ("timestamps", lambda: model.transcribe(audio, timestamps="char")),
        ("beams", lambda: model.transcribe(audio, beams=2)),
        ("language", lambda: model.transcribe(audio, language="klingon"))]:
    try:
        run()
        print(label + ": accepted")
    except tfmc.TfmcError as e:
        print(f"{label}: {e}")
