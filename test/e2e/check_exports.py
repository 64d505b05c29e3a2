"""Checks that a shared library exports only what the public headers
declare: every defined dynamic symbol (llvm-nm -D --defined-only output on
stdin) must be named in one of the headers given.

    llvm-nm -D --defined-only libtfmrt.so | check_exports.py [--allow NAME]... HEADER...

--allow names a symbol exported on purpose that no header of ours declares.
"""
import re
import sys

declared = set()
arguments = sys.argv[1:]
while arguments[:1] == ["--allow"]:
    declared.add(arguments[1])
    arguments = arguments[2:]
for path in arguments:
    declared |= set(re.findall(r"\b(\w+)\s*\(", open(path).read()))
symbols = [line.split()[-1] for line in sys.stdin if line.strip()]
undocumented = sorted(s for s in symbols if s not in declared)
if undocumented:
    print("exported but not declared in a public header: " + ", ".join(undocumented))
    sys.exit(1)
print(f"OK: {len(symbols)} exported symbols, all declared")
