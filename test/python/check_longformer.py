#!/usr/bin/env python3
"""Longformer through the Python package: @encode's inputs by role (token
ids, token types, the global attention mask), its hidden states against
transformers 4.40's (make_longformer_goldens.py), and a mask of the wrong
length refused by name.

    check_longformer.py LIBRARY GOLDEN TOKENS GLOBAL"""
import sys

import numpy as np

import tfmc

library, golden, tokens, global_mask = sys.argv[1:]
m = tfmc.load(library)
spec = m.description["entry_points"]["encode"]["inputs"]
print("encode inputs:", [t["role"] for t in spec])
ids = np.array(tokens.split(), np.int32)
mask = np.array(global_mask.split(), np.int32)
hidden = m.call("encode", ids, token_type_ids=np.zeros_like(ids),
                global_attention=mask)["hidden_states"]
expected = np.fromfile(golden, "<f4").reshape(hidden.shape)
print("global hidden states:", hidden.shape,
      "within 1e-4:", bool(np.abs(hidden - expected).max() < 1e-4))
# Outputs view the runtime's buffers (no copy), released with the array.
first = hidden[0, 0]
del hidden
again = m.call("encode", ids, token_type_ids=np.zeros_like(ids),
               global_attention=mask)["hidden_states"]
print("no copy:", not again.flags.owndata, "writable:", again.flags.writeable,
      "same values after a release:", bool(again[0, 0] == first))
try:
    m.call("encode", ids, token_type_ids=np.zeros_like(ids),
           global_attention=mask[:-1])
except tfmc.TfmcError as e:
    print("short mask:", e)
