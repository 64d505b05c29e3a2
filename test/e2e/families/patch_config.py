#!/usr/bin/env python3
"""Copies a fixture directory and changes config.json fields: KEY=JSON
(or KEY=text when it is not JSON), for the config-error tests."""
import json
import shutil
import sys

source, target, *changes = sys.argv[1:]
shutil.rmtree(target, ignore_errors=True)
shutil.copytree(source, target)
with open(f"{target}/config.json") as f:
    config = json.load(f)
for change in changes:
    key, value = change.split("=", 1)
    try:
        config[key] = json.loads(value)
    except json.JSONDecodeError:
        config[key] = value
with open(f"{target}/config.json", "w") as f:
    json.dump(config, f)
