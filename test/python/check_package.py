"""The Python package (python/tfmc) against the compiled executables and
the goldens (package.test). Prints one line per check for FileCheck.

    check_package.py WORK STORIES_MODEL STORIES_EXE CLIP_LIB CLIP_INPUTS SPEC_LIB DRAFT_LIB

STORIES_MODEL is compiled here with tfmc.compile() into WORK; SPEC_LIB is
the same model compiled with tfmc --speculative, DRAFT_LIB at int4.
"""
import subprocess
import sys

import numpy as np

import tfmc


def main():
    (work, stories_model, stories_exe, clip_lib, clip_inputs, spec_lib,
     draft_lib) = sys.argv[1:8]
    stories_lib = tfmc.compile(stories_model, work + "/libstories.so",
                               progress=False)
    m = tfmc.load(stories_lib)
    d = m.description
    print("description:", d["name"], d["family"], d["vocab_size"],
          d["max_context"], "add_bos", d["add_bos"],
          sorted(d["entry_points"]))
    print("forward inputs:", d["entry_points"]["forward"]["inputs"])
    ids = m.tokenize("Once upon a time")
    print("tokenize:", ids, "detokenize:", repr(m.detokenize(ids)))
    text = m.generate("Once upon a time", max_tokens=24)
    alone = subprocess.run([stories_exe, "--prompt", "Once upon a time",
                            "-n", "24"], capture_output=True, text=True,
                           check=True).stdout.rstrip("\n")
    print("greedy equals the executable:", "Once upon a time" + text == alone)
    streamed = list(m.generate("Once upon a time", max_tokens=24,
                               stream=True))
    print("streamed pieces:", len(streamed), "joined equal:",
          "".join(streamed) == text)
    stopped = m.generate("Once upon a time", max_tokens=24, stop=["girl"])
    print("stop string:", repr(stopped))
    sampled = [m.generate("Once", max_tokens=16, temperature=0.8, seed=s)
               for s in (7, 7, 8)]
    print("same seed, same text:", sampled[0] == sampled[1],
          "another seed differs:", sampled[0] != sampled[2])
    spec = tfmc.load(spec_lib)
    drafted = spec.generate("Once upon a time", max_tokens=80, lookup_ngram=2)
    print("speculative equals plain:",
          drafted == m.generate("Once upon a time", max_tokens=80),
          "sampled too:",
          spec.generate("Once", max_tokens=40, temperature=0.8, seed=7,
                        lookup_ngram=3, draft_max=4) ==
          m.generate("Once", max_tokens=40, temperature=0.8, seed=7))
    try:
        m.generate("Once", max_tokens=4, lookup_ngram=2)
    except tfmc.TfmcError as e:
        print("no @verify:", e)
    draft = tfmc.load(draft_lib)
    plain = m.generate("Once upon a time", max_tokens=80)
    print("draft model equals plain:",
          spec.generate("Once upon a time", max_tokens=80, draft=draft) ==
          plain, "sampled too:",
          spec.generate("Once", max_tokens=40, temperature=0.8, seed=7,
                        draft=draft, draft_p_min=0.0, draft_max=4) ==
          m.generate("Once", max_tokens=40, temperature=0.8, seed=7),
          "again:",
          spec.generate("Once upon a time", max_tokens=80, draft=draft) ==
          plain)
    try:
        spec.generate("Once", max_tokens=4, draft=draft_lib)
    except tfmc.TfmcError as e:
        print("draft of another kind:", e)
    logits = m.call("forward", np.array(ids, dtype=np.int32))["logits"]
    print("call @forward:", logits.shape, logits.dtype,
          "last row's argmax is the first greedy token:",
          int(np.argmax(logits[-1])) == m.tokenize("Once upon a time" +
                                                   text)[len(ids)])
    # Narrower products, each position's logits near f32's: bf16, and int8
    # (weights and activations in blocks of 32; 0.9999 here).
    for dtype in ("bf16", "int8"):
        narrow_model = tfmc.load(tfmc.compile(
            stories_model, f"{work}/libstories-{dtype}.so",
            compute_dtype=dtype, progress=False))
        narrow = narrow_model.call("forward",
                                   np.array(ids, dtype=np.int32))["logits"]
        cosines = (narrow * logits).sum(1) / (
            np.linalg.norm(narrow, axis=1) * np.linalg.norm(logits, axis=1))
        print(f"compute_dtype {dtype}: logits' cosine >= 0.999:",
              bool(cosines.min() >= 0.999))

    clip = tfmc.load(clip_lib)
    embeds = clip.embed(["a photo of a cat", "a photo of a dog"])
    golden = np.fromfile(clip_inputs + "/clip-tokenized.text.embeds.bin",
                         dtype="<f4")
    print("embed:", embeds.shape, "max error against transformers:",
          "%.0e" % np.abs(embeds[0] - golden).max() if
          np.abs(embeds[0] - golden).max() < 1e-4 else "TOO LARGE")
    print("CLIP's logit scale:", round(clip.description["logit_scale"], 4))

    classifier = tfmc.load(work + "/libclassifier.so")
    ranked = classifier.classify([2, 17, 42, 5, 3])
    print("classify:", [label for label, _ in ranked],
          "probabilities sum to 1:", abs(sum(p for _, p in ranked) - 1) < 1e-6,
          "most likely is the largest logit:",
          ranked[0][0] == classifier.description["labels"][int(np.argmax(
              classifier.call("classify", [2, 17, 42, 5, 3],
                              [0, 0, 0, 0, 0])["logits"]))])

    for label, action in [
            ("no such entry point", lambda: m.call("encode", [1, 2])),
            ("id out of range", lambda: m.call("forward",
                                               np.array([1, 99999], np.int32))),
            ("missing input", lambda: clip.call("embed_image")),
            ("bad library", lambda: tfmc.load(stories_exe)),
            ("not a generator", lambda: clip.generate("a cat")),
            ("compile error", lambda: tfmc.compile(work + "/missing",
                                                   work + "/m.so",
                                                   progress=False)),
            ("compute dtype", lambda: tfmc.compile(stories_model,
                                                   work + "/m.so",
                                                   compute_dtype="fp8",
                                                   progress=False))]:
        try:
            action()
            print(label + ": no error")
        except tfmc.TfmcError as e:
            print(label + ":", str(e).splitlines()[0])
        except OSError as e:
            print(label + ": OSError", e)


if __name__ == "__main__":
    main()
