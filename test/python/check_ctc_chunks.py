#!/usr/bin/env python3
"""check_ctc_chunks.py LIBRECOGNIZER AUDIO.wav OUT.json PIPELINE_DIR: the
Python package's chunked CTC transcript (tfm_ctc_transcribe through
ctypes): transcribe(chunk_length_s=10, stride_length_s=2,
timestamps="word") written to OUT.json (compare_words.py checks it against
transformers'), equal to the pipeline's chunking and word offsets
(ctc_pipeline.py, from PIPELINE_DIR) over tfmc's own @recognize of each
chunk: the same frames, so the text and every word's time exactly; the text
alone equal to the dict's, and the refusals. Prints one line per check
(speech.test)."""
import json
import sys

import numpy as np

import tfmc

library, audio, out, pipeline_dir = sys.argv[1:]
sys.path.insert(0, pipeline_dir)
import ctc_pipeline  # noqa: E402

model = tfmc.load(library)
result = model.transcribe(audio, chunk_length_s=10, stride_length_s=2,
                          timestamps="word")
json.dump(result, open(out, "w"))
print("words:", len(result["words"]) > 0, sorted(result["words"][0]))

# The pipeline over tfmc's own logits.
description = model.description
rate = description["sampling_rate"]
samples = model.read_audio(audio, max_seconds=3600)
labels = ctc_pipeline.chunked_labels(
    lambda chunk: model.call("recognize", chunk)["logits"], samples, 10, 2,
    rate, 20)
spelling = description["labels"]
words = ctc_pipeline.word_offsets(labels, spelling, 0, 4, 20 / rate)
same = len(words) == len(result["words"]) and all(
    w["word"] == o["word"] and abs(w["start"] - o["start"]) < 1e-6 and
    abs(w["end"] - o["end"]) < 1e-6 for w, o in zip(words, result["words"]))
print("words equal the pipeline's over the same logits:", same, len(words))
print("text alone equals the dict's:",
      model.transcribe(audio, chunk_length_s=10, stride_length_s=2) ==
      result["text"])
for label, run in [
        ("segments", lambda: model.transcribe(audio, timestamps="segment")),
        ("language", lambda: model.transcribe(audio, language="en")),
        ("stride", lambda: model.transcribe(audio, chunk_length_s=4,
                                            stride_length_s=2))]:
    try:
        run()
        print(label + ": accepted")
    except tfmc.TfmcError as e:
        print(f"{label}: {e}")
