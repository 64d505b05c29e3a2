"""llama.cpp's grammars/ folder (Inputs/llama-grammars, from llama.cpp
de3ff81) through generate(..., grammar=) on a random-weight model
(llama-grammars.test): every grammar is accepted, and each sampled text
(temperature 1, several seeds) that ended before max_tokens (JSON's
strings are unbounded: a random model's may not) is checked by a reader
independent of tfmc's grammar engine where Python has one: JSON by
json.loads, the list, chess moves, English and Japanese by regular
expressions; arithmetic and C have none here (they are followed to the
end). Prints one line per grammar, and each text that fails.

    check_llama_grammars.py LIBRARY GRAMMAR_DIR SEEDS
"""
import json
import os
import re
import sys

import tfmc

MOVE = r"(([a-h]x)?[a-h][1-8](=[NBKQR])?|[NBKQR][a-h]?[1-8]?x?[a-h][1-8]|O-O(-O)?)[+#]?"
PUNCT = re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
CHECKS = {
    "json": lambda t: isinstance(json.loads(t), dict),
    "json_arr": lambda t: isinstance(json.loads(t), list),
    "list": lambda t: re.fullmatch(
        "(- [^\r\n\x0b\x0c\x85\u2028\u2029]+\n)+", t) is not None,
    "chess": lambda t: re.fullmatch(
        f"1\\. {MOVE} {MOVE}\n([1-9][0-9]?\\. {MOVE} {MOVE}\n)+", t)
    is not None,
    "english": lambda t: re.fullmatch(
        f"[a-zA-Z0-9{PUNCT}]+([ \t\n][a-zA-Z0-9{PUNCT}]+)*", t) is not None,
    "japanese": lambda t: re.fullmatch(
        "[ぁ-ゟァ-ヿ、-〾一-鿿]+([ \t\n][ぁ-ゟァ-ヿ、-〾一-鿿]+)*", t) is not None,
}


def sample(m, grammar, seed, limit):
    """The text, and whether it ended before max_tokens (a piece comes per
    token)."""
    pieces = list(m.generate("Once upon a time", max_tokens=limit,
                             temperature=1.0, seed=seed, grammar=grammar,
                             stream=True))
    return "".join(pieces), len(pieces) < limit


def main():
    library, directory, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    m = tfmc.load(library)
    for name in sorted(f[:-5] for f in os.listdir(directory)
                       if f.endswith(".gbnf")):
        grammar = open(os.path.join(directory, name + ".gbnf"),
                       encoding="utf-8").read()
        ended = valid = 0
        for seed in range(seeds):
            text, whole = sample(m, grammar, seed, 300)
            if not whole:
                continue  # unbounded strings: cut, not checked
            ended += 1
            try:
                ok = name not in CHECKS or CHECKS[name](text)
            except ValueError:
                ok = False
            valid += bool(ok)
            if not ok:
                print(f"  {name} seed {seed}: {text!r}")
        reader = ("json.loads" if name.startswith("json") else
                  "a regex" if name in CHECKS else
                  "no reader: followed to the end")
        print(f"{name}: {ended} of {seeds} ended, {valid} valid ({reader})")


if __name__ == "__main__":
    main()
