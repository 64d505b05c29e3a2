#!/usr/bin/env python3
"""tfmc.Engine, the batch engine from Python: five prompts on four
sequences generate what Model.generate() gives each alone (greedy);
submit, step and cancel one by one; each request its own grammar or
JSON schema; bad requests refused by name.

    check_engine.py LANGUAGE_MODEL_LIBRARY ENCODER_LIBRARY"""
import json
import sys

import tfmc

m = tfmc.load(sys.argv[1])
engine = tfmc.Engine(m, max_sequences=4)
prompts = ["Once upon a time", "The dog", "Lily went to the park",
           "A little bird", "Tom"]
texts = engine.generate(prompts, max_tokens=24)
print("together equal alone:",
      texts == [m.generate(p, max_tokens=24) for p in prompts])
stats = engine.stats()
print("stats: generated", stats["generated_tokens"], "running",
      stats["running"], "waiting", stats["waiting"])

kept = engine.submit("Once upon a time", max_tokens=8)
dropped = engine.submit("The dog", max_tokens=8)
tokens, finish = [], None
first = engine.step()
tokens += [t for r, t, _ in first if r == kept and t is not None]
engine.cancel(dropped)
while engine.pending():
    for request, token, end in engine.step():
        assert request == kept, request
        if token is not None:
            tokens.append(token)
        finish = end or finish
print("after a cancel:", len(tokens), "tokens, finish", finish,
      m.detokenize(tokens) == m.generate("Once upon a time", max_tokens=8))
# Each request its own grammar: JSON under a schema for some, free text
# for another, batched together; greedy, each equals Model.generate's.
schema = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 1, "maximum": 99}},
    "required": ["name", "age"]}
constrained = engine.generate(prompts[:3], max_tokens=80, json_schema=schema)
gbnf = 'root ::= " " ("yes" | "no") "."'
submitted = [engine.submit(prompts[3], max_tokens=40, grammar=gbnf),
             engine.submit(prompts[4], max_tokens=8)]
outputs = {r: [] for r in submitted}
while engine.pending():
    for request, token, _ in engine.step():
        if token is not None:
            outputs[request].append(token)
parsed = [json.loads(t) for t in constrained]
print("schema per request:",
      all(1 <= v["age"] <= 99 and len(v["name"]) <= 12 for v in parsed),
      constrained == [m.generate(p, max_tokens=80, json_schema=schema)
                      for p in prompts[:3]],
      m.detokenize(outputs[submitted[0]]) in (" yes.", " no."),
      m.detokenize(outputs[submitted[1]]) ==
      m.generate(prompts[4], max_tokens=8))
for label, call in [
        ("bad schema", lambda: engine.submit(
            "Tom", json_schema={"type": "string", "pattern": "(a"})),
        ("both", lambda: engine.submit("Tom", grammar=gbnf,
                                       json_schema=schema)),
        ("too long", lambda: engine.submit([1] * 600, max_tokens=4)),
        ("id out of range", lambda: engine.submit([1, 99999], max_tokens=4)),
        ("cancel twice", lambda: engine.cancel(dropped)),
        ("not a decoder", lambda: tfmc.Engine(tfmc.load(sys.argv[2])))]:
    try:
        call()
        print(label, "accepted")
    except tfmc.TfmcError as e:
        print(f"{label}:", e)
engine.close()
