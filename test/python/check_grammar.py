"""generate(..., grammar=) in the Python package (grammar.test): sampled
text the grammar allows, streamed pieces that join to it, a greedy
constrained text equal to the executable's, and a malformed grammar as a
TfmcError naming its line and column. Prints one line per check.

    check_grammar.py LIBRARY EXECUTABLE
"""
import json
import re
import subprocess
import sys

import jsonschema

import tfmc

GRAMMAR = 'root ::= (" " [a-z]+){2,6} ("." | "!")'


def main():
    library, executable = sys.argv[1:3]
    m = tfmc.load(library)
    texts = [m.generate("Once upon a time", max_tokens=60, temperature=1.5,
                        seed=s, grammar=GRAMMAR) for s in range(6)]
    print("sampled texts the grammar allows:",
          sum(bool(re.fullmatch(r"( [a-z]+){2,6}[.!]", t)) for t in texts),
          "of", len(texts))
    streamed = list(m.generate("Once upon a time", max_tokens=60,
                               temperature=1.5, seed=3, grammar=GRAMMAR,
                               stream=True))
    print("streamed joined equal:", "".join(streamed) == texts[3])
    greedy = m.generate("Once upon a time", max_tokens=60, grammar=GRAMMAR)
    alone = subprocess.run([executable, "--prompt", "Once upon a time",
                            "-n", "60", "--grammar", GRAMMAR],
                           capture_output=True, text=True,
                           check=True).stdout.rstrip("\n")
    print("greedy equals the executable:", "Once upon a time" + greedy == alone)
    for bad in ['root ::= "a" (', 'root ::= "\\q"', "item ::= [a-z]"]:
        try:
            m.generate("Once", max_tokens=4, grammar=bad)
            print("accepted:", bad)
        except tfmc.TfmcError as e:
            print("refused:", e)
    try:
        m.generate("Once", max_tokens=4, grammar=42)
    except tfmc.TfmcError as e:
        print("refused:", e)

    schema = {"type": "object",
              "properties": {"answer": {"enum": ["yes", "no"]},
                             "why": {"type": "string", "maxLength": 20},
                             "score": {"type": ["integer", "null"]}},
              "required": ["answer", "why", "score"]}
    valid = 0
    for seed in range(5):
        text = m.generate("Once upon a time", max_tokens=300, temperature=1.5,
                          seed=seed, json_schema=schema)
        try:
            jsonschema.validate(json.loads(text), schema)
            valid += 1
        except (ValueError, jsonschema.ValidationError) as e:
            print("invalid:", repr(text), e)
    print("json_schema texts valid:", valid, "of 5")
    for bad in [{"type": "string", "pattern": "^(?=a)"}, "{"]:
        try:
            m.generate("Once", max_tokens=4, json_schema=bad)
        except tfmc.TfmcError as e:
            print("refused:", e)


if __name__ == "__main__":
    main()
