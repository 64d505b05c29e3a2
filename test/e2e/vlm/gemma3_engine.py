#!/usr/bin/env python3
"""Gemma 3's image rows through the engine (tfmc.Engine), which attend to
each other both ways and so must run in one step: a prefill chunk (8)
smaller than an image's 16 rows is raised to hold one, and of two requests
sharing steps, one whose image does not fit what a step has left waits
for the next. Each request's greedy ids equal a session's, the
executable's (EXECUTABLE, the same model).

    gemma3_engine.py LIBRARY PROMPT_FILE IMAGE EXECUTABLE"""
import subprocess
import sys

import tfmc

library, prompt_file, image, executable = sys.argv[1:5]
model = tfmc.load(library)
with open(prompt_file, encoding="utf-8") as f:
    prompt = f.read()
engine = tfmc.Engine(model, max_sequences=2, prefill_chunk=8)
requests = [engine.submit(prompt, images=[image], max_tokens=6)
            for _ in range(2)]
ids = {request: [] for request in requests}
while engine.pending():
    for done, token, finish in engine.step():
        if token is not None:
            ids[done].append(token)
# The session's prefill runs the rows in one call whatever its chunk.
out = subprocess.run([executable, "--prompt-file", prompt_file, image, "-n",
                      "6", "--print-ids"], capture_output=True, text=True,
                     check=True).stdout.split()
session = [int(t) for t in out[-6:]]
print("engine ids:", " ".join(map(str, ids[requests[0]])))
print("engine equals session:",
      all(ids[request] == session for request in requests))
