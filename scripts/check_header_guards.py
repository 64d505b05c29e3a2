#!/usr/bin/env python3
"""Checks that every header's include guard names the header's place, so
that a moved file cannot keep its old folder's name (docs/architecture.md,
"Header guards"):

    check_header_guards.py [SRC_ROOT]

The guard of FOLDER/.../Name.h is TFM_FOLDER_..._NAME_H (every character
that is not a letter or digit an underscore, upper case); a public header,
included as tfm/NAME.h, is TFM_NAME_H, a leading "tfm_" of NAME dropped
(tfm/tfm_runtime.h: TFM_RUNTIME_H). A header without an #ifndef guard is
skipped (#pragma once, or a file meant to be included repeatedly). Prints
each wrong guard (file, what it is, what it should be) and exits 1, or
prints a count.
"""
import os
import re
import sys

SOURCE_FOLDERS = ["ir", "passes", "codegen", "compiler", "frontend",
                  "runtime", "serve", "tools", "fuzz", "test", "python"]
PUBLIC = "runtime/include/tfm/"
GUARD = re.compile(r"^#ifndef (\w+)\n#define \1\b", re.M)


def expected_guard(path):
    if path.startswith(PUBLIC):
        name = path[len(PUBLIC):-len(".h")]
        if name.startswith("tfm_"):
            name = name[len("tfm_"):]
        return "TFM_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper() + "_H"
    return "TFM_" + re.sub(r"[^A-Za-z0-9]", "_", path[:-len(".h")]).upper() + "_H"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    checked, wrong = 0, []
    for top in SOURCE_FOLDERS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(".h"):
                    continue
                full = os.path.join(folder, name)
                path = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, encoding="utf-8", errors="replace") as f:
                    match = GUARD.search(f.read())
                if not match:
                    continue
                checked += 1
                if match.group(1) != expected_guard(path):
                    wrong.append((path, match.group(1), expected_guard(path)))
    for path, guard, expected in sorted(wrong):
        print(f"{path}: include guard {guard} should be {expected}")
    if wrong:
        print(f"check_header_guards: {len(wrong)} of {checked} guards do not "
              "name their header's place")
        return 1
    print(f"check_header_guards: {checked} guards, each naming its header's "
          "place")
    return 0


if __name__ == "__main__":
    sys.exit(main())
