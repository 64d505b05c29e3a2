#!/usr/bin/env python3
"""Copies a fixture directory and changes config.json fields: KEY=JSON
(or KEY=text when it is not JSON; OUTER.KEY for a field of a nested
object, such as text_config.vocab_size), for the config-error tests; with
--file NAME first, the fields of that JSON file of the directory instead
(generation_config.json, preprocessor_config.json)."""
import json
import shutil
import sys

source, target, *changes = sys.argv[1:]
name = "config.json"
if changes[:1] == ["--file"]:
    name, changes = changes[1], changes[2:]
shutil.rmtree(target, ignore_errors=True)
shutil.copytree(source, target)
with open(f"{target}/{name}") as f:
    config = json.load(f)
for change in changes:
    key, value = change.split("=", 1)
    fields = config
    outer, _, inner = key.partition(".")
    if inner and isinstance(config.get(outer), dict):
        fields, key = config[outer], inner
    try:
        fields[key] = json.loads(value)
    except json.JSONDecodeError:
        fields[key] = value
with open(f"{target}/{name}", "w") as f:
    json.dump(config, f)
