#!/usr/bin/env python3
"""Images in a vision-language model's prompt from Python:
generate(prompt, images=[...]) with preprocessed pixels and with a file,
its greedy text that of transformers 4.40 (make_llava_goldens.py); the
engine's prefix sharing through an image; what is refused, by name.

    check_vlm.py LLAVA_LIBRARY TEXT_LIBRARY INPUTS PHOTO"""
import sys

import numpy as np

import tfmc

llava = tfmc.load(sys.argv[1])
text_model = tfmc.load(sys.argv[2])
inputs, photo = sys.argv[3], sys.argv[4]
prompt = "USER: <image>\nWhat is in the picture? ASSISTANT:"
pixels = np.fromfile(f"{inputs}/pixels.f32", dtype="<f4").reshape(3, 32, 32)
with open(f"{inputs}/llava.greedy.text", encoding="utf-8") as f:
    golden = f.read()[:-1]
print("pixels:", llava.generate(prompt, images=[pixels], max_tokens=6) ==
      golden)
# The same rows whether the prompt holds one placeholder or every row's.
ids = llava.tokenize(prompt)
wide = [t for i in ids for t in ([i] * 16 if i == 512 else [i])]
print("every row:", llava.generate(wide, images=[pixels], max_tokens=6) ==
      golden)
print("file:", len(llava.generate(prompt, images=[photo], max_tokens=3)) > 0)
with open(f"{inputs}/llava.greedy.txt") as f:
    golden_ids = [int(t) for t in f.read().split()]
question = "USER: What is in the picture? ASSISTANT:"


def run(engine, requests):
    ids = {engine.submit(p, max_tokens=6, **o): p for p, o in requests}
    tokens = {i: [] for i in ids}
    while engine.pending():
        for request, token, finish in engine.step():
            if token is not None:
                tokens[request].append(token)
    return [tokens[i] for i in ids]


# The engine: a request with the image (its prefix before the image
# shared with the text one) and one of text alone share steps; each gives
# what it gives alone.
both = run(tfmc.Engine(llava, max_sequences=4),
           [(prompt, {"images": [pixels]}), (question, {})])
alone = run(tfmc.Engine(llava, max_sequences=4), [(question, {})])
print("engine:", both[0] == golden_ids, both[1] == alone[0])
# The prefix table keys an image's rows: the same image again reuses the
# positions through it (a whole block of 32 here), another image none (its
# rows begin in the first block).
engine = tfmc.Engine(llava, max_sequences=4)
first = run(engine, [(prompt, {"images": [pixels]})])
reused = engine.stats()["prefix_tokens_reused"]
again = run(engine, [(prompt, {"images": [pixels]})])
same = engine.stats()["prefix_tokens_reused"] - reused
flipped = np.ascontiguousarray(pixels[:, ::-1])
other = run(engine, [(prompt, {"images": [flipped]})])
print("prefix reused:", reused, same,
      engine.stats()["prefix_tokens_reused"] - reused - same,
      first[0] == golden_ids, again == first,
      other == run(tfmc.Engine(llava), [(prompt, {"images": [flipped]})]))
for name, call in [
        ("two placeholders", lambda: llava.generate(
            prompt + " <image>", images=[pixels], max_tokens=1)),
        ("no image", lambda: llava.generate(prompt, max_tokens=1)),
        ("shape", lambda: llava.generate(
            prompt, images=[pixels[:, :16]], max_tokens=1)),
        ("text model", lambda: text_model.generate(
            [1, 2], images=[pixels], max_tokens=1))]:
    try:
        call()
        print(name, "accepted")
    except tfmc.TfmcError as error:
        print(f"{name}: {error}")
