#!/usr/bin/env python3
"""Speculative decoding in the batch engine (max_drafts, each request's
lookup_ngram): drafted tokens checked through @verify_batch give every
request the text it gets without drafts, greedy or sampled, with prompts
prefilled in the same steps, requests without drafts beside, a grammar,
and a KV pool small enough to preempt; the events and stats count drafts;
bad options refused by name.

With a draft model (DRAFT_LIBRARY: the model at int4, Engine(draft=)),
requests that do not draft by prompt lookup draft with it, and the texts
are the same again.

    check_engine_speculative.py SPECULATIVE_LIBRARY PLAIN_LIBRARY \
        DRAFT_LIBRARY"""
import sys

import tfmc

spec = tfmc.load(sys.argv[1])
plain = tfmc.load(sys.argv[2])
draft = tfmc.load(sys.argv[3])
# Stories repeat their names and phrases: prompt lookup drafts well.
prompts = ["Once upon a time", "Lily and Tom went to the park. Lily",
           "The dog", "Tom had a ball. Tom liked the ball. Tom",
           "A little bird"]


alone = [plain.generate(p, max_tokens=60) for p in prompts]
engine = tfmc.Engine(spec, max_sequences=3, max_drafts=6)
texts = engine.generate(prompts, max_tokens=60, lookup_ngram=2)
stats = engine.stats()
print("greedy with drafts equals alone:", texts == alone,
      "drafted", stats["drafted_tokens"] > 0,
      "accepted", 0 < stats["accepted_tokens"] <= stats["drafted_tokens"],
      "steps fewer than tokens:",
      stats["steps"] < stats["generated_tokens"])

# Requests arriving while others verify; some without drafts.
engine = tfmc.Engine(spec, max_sequences=4, max_drafts=4)
requests, tokens = [], {}
for i, prompt in enumerate(prompts):
    requests.append(engine.submit(prompt, max_tokens=60,
                                  lookup_ngram=3 if i % 2 == 0 else 0,
                                  draft_max=4 if i % 4 == 0 else 0))
    tokens[requests[-1]] = []
    for _ in range(3):
        for request, token, _ in engine.step():
            if token is not None:
                tokens[request].append(token)
while engine.pending():
    for request, token, _ in engine.step():
        if token is not None:
            tokens[request].append(token)
print("arriving, mixed:",
      [spec.detokenize(tokens[r]) for r in requests] == alone)

# Sampled: each request's own sampler chooses from the same logits.
sampled = tfmc.Engine(plain, max_sequences=3).generate(
    prompts, max_tokens=50, temperature=0.9, top_k=40, seed=11)
drafted = tfmc.Engine(spec, max_sequences=3, max_drafts=8).generate(
    prompts, max_tokens=50, temperature=0.9, top_k=40, seed=11,
    lookup_ngram=2)
print("sampled with drafts equals without:", drafted == sampled)

# A grammar, and a pool that holds about two sequences (preemption).
gbnf = 'root ::= [a-zA-Z ,.]+'
print("grammar:", tfmc.Engine(spec, max_sequences=3, max_drafts=4).generate(
    prompts, max_tokens=40, grammar=gbnf, lookup_ngram=2) ==
    tfmc.Engine(plain, max_sequences=3).generate(prompts, max_tokens=40,
                                                 grammar=gbnf))
# (1280 bytes a position: 819 positions for four sequences of 250 new
# tokens.)
small = tfmc.Engine(spec, max_sequences=4, max_drafts=8, kv_pool_mb=1,
                    block_positions=16)
print("small pool:", small.generate(prompts[:4], max_tokens=250,
                                    lookup_ngram=2) ==
      [plain.generate(p, max_tokens=250) for p in prompts[:4]],
      "preempted:", small.stats()["preemptions"] > 0)

# Each event carries its request's counts so far.
engine = tfmc.Engine(spec, max_sequences=2, max_drafts=6)
request = engine.submit(prompts[3], max_tokens=60, lookup_ngram=2)
last = None
while engine.pending():
    for event in engine.step(drafts=True):
        last = event
_, _, finish, drafted, accepted = last
print("last event counts:", finish, drafted ==
      engine.stats()["drafted_tokens"], accepted ==
      engine.stats()["accepted_tokens"], accepted > 0)

# The draft model: greedy (requests by prompt lookup beside) and sampled
# as without drafts, and through a small pool's preemptions (the draft's
# slot freed with the target's).
engine = tfmc.Engine(spec, max_sequences=3, max_drafts=4, draft=draft)
requests = [engine.submit(p, max_tokens=60, lookup_ngram=2 if i % 2 else 0)
            for i, p in enumerate(prompts)]
tokens = {r: [] for r in requests}
while engine.pending():
    for request, token, _ in engine.step():
        if token is not None:
            tokens[request].append(token)
texts = [spec.detokenize(tokens[r]) for r in requests]
stats = engine.stats()
print("draft model: greedy equals alone:", texts == alone, "accepted",
      0 < stats["accepted_tokens"] < stats["drafted_tokens"],
      "steps fewer than tokens:", stats["steps"] < stats["generated_tokens"])
sure = tfmc.Engine(spec, max_sequences=3, max_drafts=4, draft=draft,
                   draft_p_min=1.0)
print("draft model: p_min 1 drafts nothing:",
      sure.generate(prompts, max_tokens=60) == alone,
      sure.stats()["drafted_tokens"] == 0)
print("draft model: sampled equals without:", tfmc.Engine(
    spec, max_sequences=3, max_drafts=6, draft=draft).generate(
        prompts, max_tokens=50, temperature=0.9, top_k=40, seed=11) ==
    sampled)
small = tfmc.Engine(spec, max_sequences=4, max_drafts=8, kv_pool_mb=1,
                    block_positions=16, draft=draft)
print("draft model: small pool:",
      small.generate(prompts[:4], max_tokens=250, ignore_eos=True) ==
      tfmc.Engine(plain, max_sequences=4).generate(
          prompts[:4], max_tokens=250, ignore_eos=True),
      "preempted:", small.stats()["preemptions"] > 0)

for what, make in [
        ("draft model without max_drafts",
         lambda: tfmc.Engine(spec, draft=draft)),
        ("draft_p_min out of range",
         lambda: tfmc.Engine(spec, max_drafts=4, draft=draft,
                             draft_p_min=1.5)),
        ("no @verify_batch", lambda: tfmc.Engine(plain, max_drafts=4)),
        ("max_drafts out of range", lambda: tfmc.Engine(spec, max_drafts=65)),
        ("drafts without max_drafts",
         lambda: tfmc.Engine(spec).submit("Once", lookup_ngram=2)),
        ("draft_max above the engine's",
         lambda: tfmc.Engine(spec, max_drafts=4).submit(
             "Once", lookup_ngram=2, draft_max=5)),
        ("n-gram out of range",
         lambda: tfmc.Engine(spec, max_drafts=4).submit(
             "Once", lookup_ngram=65))]:
    try:
        make()
        print(what + ": accepted")
    except tfmc.TfmcError as e:
        print(what + ":", e)
