#!/usr/bin/env python3
"""Run-time LoRA adapters from Python (Model.load_lora, generate(lora=),
Engine.submit(lora=)): an adapter's greedy text is the merged model's;
an engine step mixing four adapters and none gives each request its own
text; slots, unloading and bad adapters are refused by name.

    check_lora.py SLOTS_LIBRARY FIXTURE PLAIN_MERGED LINEAR_MERGED"""
import sys

import tfmc

slots = tfmc.load(sys.argv[1])
fixture = sys.argv[2]
merged = {"plain": tfmc.load(sys.argv[3]), "linear": tfmc.load(sys.argv[4])}
prompts = ["Once upon a time", "Lily and Tom went to the park. Lily",
           "The dog", "Tom had a ball. Tom", "A little bird"]
lora = slots.description["lora"]
print("slots:", lora["slots"], "rank:", lora["rank"], "targets:",
      len(lora["targets"]), lora["targets"][0])

plain = slots.load_lora(f"{fixture}/plain/adapter", scale=0.5)
linear = slots.load_lora(f"{fixture}/linear/adapter")
print("merged text:",
      all(slots.generate(p, max_tokens=40, lora=plain) ==
          merged["plain"].generate(p, max_tokens=40) for p in prompts),
      all(slots.generate(p, max_tokens=40, lora=linear) ==
          merged["linear"].generate(p, max_tokens=40) for p in prompts))

# Four adapters (two of them the same folders at other scales) and none,
# each request alone and then all in one engine's steps.
strong = slots.load_lora(f"{fixture}/plain/adapter", scale=1.0)
weak = slots.load_lora(f"{fixture}/linear/adapter", scale=0.25)
adapters = [0, plain, linear, strong, weak]
cases = [(p, a) for p in prompts[:3] for a in adapters]
alone = [slots.generate(p, max_tokens=30, lora=a) for p, a in cases]
print("adapters differ:", len(set(alone[:5])) == 5)
engine = tfmc.Engine(slots, max_sequences=8)
requests = [engine.submit(p, max_tokens=30, lora=a) for p, a in cases]
tokens = {r: [] for r in requests}
while engine.pending():
    for request, token, _ in engine.step():
        if token is not None:
            tokens[request].append(token)
print("engine, mixed:", [slots.detokenize(tokens[r]) for r in requests]
      == alone)

# A running request holds its adapter.
request = engine.submit("Once upon a time", max_tokens=5, lora=weak)
try:
    slots.unload_lora(weak)
except tfmc.TfmcError as e:
    print("in use:", e)
while engine.pending():
    engine.step()
engine.close()
slots.unload_lora(weak)
for what, call in [
        ("unloaded", lambda: slots.generate("The dog", lora=weak)),
        ("engine, unloaded",
         lambda: tfmc.Engine(slots).submit("The dog", lora=weak)),
        ("full", lambda: (slots.load_lora(f"{fixture}/plain/adapter"),
                          slots.load_lora(f"{fixture}/plain/adapter"))),
        ("no slots",
         lambda: merged["plain"].load_lora(f"{fixture}/plain/adapter")),
        ("scale", lambda: slots.load_lora(f"{fixture}/plain/adapter",
                                          scale=float("nan"))),
        ("missing", lambda: slots.load_lora(f"{fixture}/none"))]:
    try:
        call()
        print(what, "not refused")
    except tfmc.TfmcError as e:
        print(f"{what}: {e}")
