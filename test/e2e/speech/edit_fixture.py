#!/usr/bin/env python3
"""edit_fixture.py FIXTURE OUT FILE [KEY VALUE]: copies the model directory
FIXTURE to OUT with one change to its JSON file FILE: KEY set to VALUE
(JSON), or without FILE when no KEY is given."""
import json
import os
import shutil
import sys

fixture, out, name, *change = sys.argv[1:]
shutil.rmtree(out, ignore_errors=True)
shutil.copytree(fixture, out)
path = os.path.join(out, name)
if not change:
    os.remove(path)
else:
    with open(path) as f:
        data = json.load(f)
    data[change[0]] = json.loads(change[1])
    with open(path, "w") as f:
        json.dump(data, f)
