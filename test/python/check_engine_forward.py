#!/usr/bin/env python3
"""The batch engine on a decoder fixture of 32 positions (GPT-Neo's and
Gemma 2's global and local layers, Qwen3's head norms, Mixtral's experts,
Qwen3.5's Gated DeltaNet layers and their recurrent states):
prompts of several lengths, generated together on two sequences, continue
as greedy decoding through @forward over the whole sequence does (no cache
at all). Prints what the engine's KV memory holds: a block's bytes (its
positions of every paged layer), the rings' (windowed layers kept
apart, every sequence's) and the recurrent states' (every sequence's).

    check_engine_forward.py LIBRARY [MICRO_BATCH_ROWS]

MICRO_BATCH_ROWS: the engine's option, for a model in pipeline stages,
whose steps then run as micro-batches: printed, more model calls than
steps."""
import sys

import numpy as np

import tfmc

m = tfmc.load(sys.argv[1])
context = 32  # the fixture's max_position_embeddings


def greedy_by_forward(prompt, count):
    ids = list(prompt)
    for _ in range(count):
        logits = m.call("forward", token_ids=np.array(ids, np.int32))["logits"]
        ids.append(int(np.argmax(logits[-1])))
    return ids[len(prompt):]


prompts = [[1, 17, 42], [5], [1, 17, 42, 5, 63, 0, 28, 9, 33],
           [12, 50, 7, 3, 8, 60]]
micro_batch_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 0
engine = tfmc.Engine(m, max_sequences=2, micro_batch_rows=micro_batch_rows)
requests = {engine.submit(p, max_tokens=context - len(p), ignore_eos=True): p
            for p in prompts}
tokens = {r: [] for r in requests}
while engine.pending():
    for request, token, _ in engine.step():
        if token is not None:
            tokens[request].append(token)
equal = [tokens[r] == greedy_by_forward(p, context - len(p))
         for r, p in requests.items()]
print("engine equals forward:", equal)
stats = engine.stats()
print(f"block {stats['kv_block_bytes']} bytes of {stats['kv_block_positions']}"
      f" positions, rings {stats['kv_ring_bytes']} bytes, recurrent states"
      f" {stats['recurrent_state_bytes']} bytes")
if micro_batch_rows:
    print("micro-batches: more model calls than steps:",
          stats["model_calls"] > stats["steps"])
engine.close()
