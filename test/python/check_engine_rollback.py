#!/usr/bin/env python3
"""Speculative decoding in the batch engine where a verify step changes
more than the rows of its positions: windowed layers' rings (gpt-oss's
and Gemma 2's sliding layers, windows of 4 in the fixtures), whose rows
the drafts overwrite while earlier positions still read them, and
recurrent states (Qwen3.5's), which fold the drafts in. Rejected drafts'
ring rows are put back, and the states go back to before the step and
run the kept positions again, so every request's ids equal those it gets
without drafts, greedy and sampled; drafts were accepted and rejected.

    check_engine_rollback.py SPECULATIVE_LIBRARY PLAIN_LIBRARY NAME"""
import sys

import tfmc

spec = tfmc.load(sys.argv[1])
plain = tfmc.load(sys.argv[2])
name = sys.argv[3]
# Prompts whose n-grams recur: prompt lookup drafts from them.
prompts = [[1, 17, 42, 5, 63, 17, 42, 5], [1, 9, 9, 9, 9], [1, 30, 31, 30],
           [1, 5, 6, 7, 5, 6], [1, 2, 3]]


def ids(engine_or_model, **options):
    if isinstance(engine_or_model, tfmc.Engine):
        engine = engine_or_model
    else:
        engine = tfmc.Engine(engine_or_model, max_sequences=3)
    requests = [engine.submit(p, max_tokens=20, ignore_eos=True, **options)
                for p in prompts]
    tokens = {r: [] for r in requests}
    while engine.pending():
        for request, token, _ in engine.step():
            if token is not None:
                tokens[request].append(token)
    return [tokens[r] for r in requests], engine


alone, _ = ids(plain)
drafted, engine = ids(tfmc.Engine(spec, max_sequences=3, max_drafts=6),
                      lookup_ngram=1)
stats = engine.stats()
print(name, "greedy with drafts equals without:", drafted == alone,
      "accepted and rejected:",
      0 < stats["accepted_tokens"] < stats["drafted_tokens"])
sampled, _ = ids(plain, temperature=0.9, top_k=20, seed=5)
drafted, _ = ids(tfmc.Engine(spec, max_sequences=2, max_drafts=3),
                 temperature=0.9, top_k=20, seed=5, lookup_ngram=1)
print(name, "sampled with drafts equals without:", drafted == sampled)
