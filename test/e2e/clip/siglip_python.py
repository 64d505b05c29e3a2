#!/usr/bin/env python3
"""The Python package on a SigLIP model (make_siglip_tokenizer.py): the
description's score scale, bias and text pad token, and embed() of a text
padded to the context as the executable pads it, against
get_text_features.

    siglip_python.py LIBRARY GOLDEN_EMBEDS"""
import sys

import numpy as np

import tfmc

m = tfmc.load(sys.argv[1])
d = m.description
print("logit_scale %.3f logit_bias %.3f pad %d" % (
    d["logit_scale"], d["logit_bias"], d["text_pad_token"]))
golden = np.fromfile(sys.argv[2], dtype="<f4")
print("embed within 1e-4:",
      bool(np.abs(m.embed("a photo of a cat") - golden).max() < 1e-4))
