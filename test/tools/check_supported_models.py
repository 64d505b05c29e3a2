"""Checks that a document names every model tfmc reads: the "Models" lines
of `tfmc --help` (stdin), which the frontend derives from its tables of
families, each name in backquotes somewhere in the document (argv[1]).
Exits 1 naming the ones missing.

    tfmc --help | check_supported_models.py README.md
"""
import re
import sys

lines = sys.stdin.read().split("Models (", 1)[1].splitlines()[1:]
names = []
for line in lines:
    if ":" not in line or not line.startswith("  "):
        break
    names += [n.strip() for n in line.split(":", 1)[1].split(",")]
document = open(sys.argv[1]).read()
# Names in inline code, outside fenced blocks (whose ``` would pair wrongly).
document = re.sub(r"```.*?```", "", document, flags=re.S)
quoted = set(re.findall(r"`([^`]+)`", document))
missing = [n for n in names if n not in quoted]
if missing:
    print(f"{sys.argv[1]} does not name: " + ", ".join(missing))
    sys.exit(1)
print(f"OK: {sys.argv[1]} names all {len(names)}")
