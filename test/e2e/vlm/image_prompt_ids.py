#!/usr/bin/env python3
"""A vision-language prompt's ids once its images are in it, through a
compiled model's library (tfmc's Python API): the prompt file tokenized,
each image placeholder replaced by its image's ids (tfm_image_prompt_ids:
the rows' placeholders, with the tokens its processor writes around an
image's tiles: Idefics3's), printed on one line.

    image_prompt_ids.py LIBRARY PROMPT_FILE IMAGE..."""
import sys

import tfmc

model = tfmc.load(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
    prompt = f.read()
ids = model._tokenize(prompt, None, "the prompt")
_, ids = model._splice_images(ids, sys.argv[3:])
print(" ".join(str(i) for i in ids))
