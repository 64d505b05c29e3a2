"""Checks that a shared library exports only what the public headers
declare: every defined dynamic symbol (llvm-nm -D --defined-only output on
stdin) must be named in one of the headers given.

    llvm-nm -D --defined-only libtfmrt.so | check_exports.py HEADER...
"""
import re
import sys

declared = set()
for path in sys.argv[1:]:
    declared |= set(re.findall(r"\b(\w+)\s*\(", open(path).read()))
symbols = [line.split()[-1] for line in sys.stdin if line.strip()]
undocumented = sorted(s for s in symbols if s not in declared)
if undocumented:
    print("exported but not declared in a public header: " + ", ".join(undocumented))
    sys.exit(1)
print(f"OK: {len(symbols)} exported symbols, all declared")
