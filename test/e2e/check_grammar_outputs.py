"""Checks each line of a file of generated texts (tfm-main --prompt P
--grammar-file person.gbnf, several seeds): the prompt, then a JSON object
that Inputs/grammars/person.gbnf allows. Prints one summary line.

  check_grammar_outputs.py FILE PROMPT COUNT
"""
import json
import re
import sys

path, prompt, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l for l in open(path, encoding="utf-8").read().split("\n") if l]
valid = 0
for line in lines:
    if not line.startswith(prompt):
        print("no prompt:", repr(line))
        continue
    try:
        value = json.loads(line[len(prompt):])
    except ValueError as e:
        print("not JSON:", repr(line), e)
        continue
    ok = (list(value) == ["name", "age", "pets"] and
          re.fullmatch(r"[A-Za-z][a-z ]{0,15}", value["name"]) and
          isinstance(value["age"], int) and 1 <= value["age"] <= 99 and
          isinstance(value["pets"], list) and len(value["pets"]) <= 4 and
          all(re.fullmatch(r"[a-z\n]{1,10}", p) for p in value["pets"]))
    if ok:
        valid += 1
    else:
        print("does not match:", repr(line))
print(f"{valid} of {count} outputs valid, {len(set(lines))} distinct")
