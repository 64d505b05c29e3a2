#!/usr/bin/env python3
"""Speculative sampling keeps the model's distribution: a chi-square test
of the first two sampled tokens (the second chosen from @verify's logits
with a draft model's guess beside it) against the probabilities the
model's @forward logits give, through the sampler's temperature and
top-k. The same test against the distribution at another temperature
fails, so the test can tell.

    check_speculative_sampling.py SPECULATIVE_LIBRARY DRAFT_LIBRARY"""
import collections
import math
import sys

import numpy as np

import tfmc

TEMPERATURE, TOP_K, SAMPLES = 1.0, 8, 8000


def kept(logits, temperature):
    """The sampler's distribution: the top k logits over the temperature,
    softmaxed (tokens beyond them never drawn)."""
    top = np.argsort(-logits, kind="stable")[:TOP_K]
    z = logits[top].astype(np.float64) / temperature
    p = np.exp(z - z.max())
    return dict(zip(top.tolist(), p / p.sum()))


def expected(model, prompt, temperature):
    """The probability of each two-token text after `prompt`."""
    def last(ids):
        return model.call("forward", np.array(ids, dtype=np.int32))[
            "logits"][-1]
    start = len(model.detokenize(prompt))
    texts = collections.Counter()
    for first, p1 in kept(last(prompt), temperature).items():
        for second, p2 in kept(last(prompt + [first]), temperature).items():
            texts[model.detokenize(prompt + [first, second])[start:]] += \
                p1 * p2
    return texts


def chi_square(observed, probabilities, n):
    """The statistic over categories expected at least 5 times (the rest
    pooled), its degrees of freedom, and the 0.001 critical value
    (Wilson-Hilferty)."""
    big = {t for t, p in probabilities.items() if p * n >= 5}
    cells = [(observed[t], probabilities[t] * n) for t in big]
    rest = n - sum(o for o, _ in cells), n - sum(e for _, e in cells)
    if rest[1] >= 5:
        cells.append(rest)
    stat = sum((o - e) ** 2 / e for o, e in cells)
    df = len(cells) - 1
    critical = df * (1 - 2 / (9 * df) + 3.0902 * math.sqrt(2 / (9 * df))) ** 3
    return stat, df, critical


def main():
    model = tfmc.load(sys.argv[1])
    draft = tfmc.load(sys.argv[2])
    prompt = model.tokenize("Once upon a time")
    samples = collections.Counter(
        model.generate(prompt, max_tokens=2, temperature=TEMPERATURE,
                       top_k=TOP_K, seed=seed, draft=draft, draft_p_min=0.0)
        for seed in range(SAMPLES))
    truth = expected(model, prompt, TEMPERATURE)
    print("every sampled text possible:", set(samples) <= set(truth))
    stat, df, critical = chi_square(samples, truth, SAMPLES)
    print(f"model's distribution: chi-square {stat:.1f} on {df} degrees of "
          f"freedom, 0.001 critical {critical:.1f}:",
          "same" if stat < critical else "DIFFERENT")
    stat, df, critical = chi_square(samples, expected(model, prompt, 1.3),
                                    SAMPLES)
    print("another temperature's:", "same" if stat < critical else
          "different")


if __name__ == "__main__":
    main()
