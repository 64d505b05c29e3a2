#!/usr/bin/env python3
"""embed() of a BERT sentence embedder (token ids and token types): several
texts in one packed call (@embed_batch) equal each text embedded alone;
no texts is an error.

    check_embed.py LIBRARY"""
import sys

import numpy as np

import tfmc

m = tfmc.load(sys.argv[1])
texts = ["good day", "the cat sat.", "why?"]
together = m.embed(texts)
alone = np.stack([m.embed(t) for t in texts])
print("packed:", together.shape, "equal alone within 1e-5:",
      bool(np.abs(together - alone).max() < 1e-5))
print("token ids:", m.embed([[2, 17, 3], [2, 9, 9, 3]]).shape,
      m.embed([2, 17, 3]).shape)
try:
    m.embed([])
except tfmc.TfmcError as e:
    print("no texts:", e)
