#!/usr/bin/env python3
"""Checks that every project #include crosses folders as the layering table
of docs/architecture.md allows, so that a new arrow back up the tree fails
CI (scripts/test.sh runs it).

    check_layering.py [SRC_ROOT] [--table FILE]

A folder is a top-level folder of the tree, or, under codegen/, frontend/
and runtime/, its subfolder (frontend/builders); files directly under
codegen/ or frontend/ are that folder's own. Includes within one folder are
free. The table's rows are `| folder | may include |`, the second column a
comma-separated list of folders (`-` for none); an entry written
`folder (debt)` is allowed for now and named in the report, a crossing the
architecture means to remove. Prints each include the table does not allow
(file, line, the crossing) and exits 1, or prints a summary. --matrix
prints how many includes cross between each pair of folders instead.
"""
import argparse
import collections
import os
import re
import sys

SOURCE_FOLDERS = ["ir", "passes", "codegen", "compiler", "frontend",
                  "runtime", "serve", "tools", "fuzz"]
SPLIT_FOLDERS = {"codegen", "frontend", "runtime"}
EXTENSIONS = (".c", ".cpp", ".h", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    parts = path.split("/")
    if parts[0] in SPLIT_FOLDERS and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    return parts[0]


def read_table(path):
    """{folder: ({allowed}, {debts})} from the markdown table that follows
    the heading "## Layering"."""
    rows, inside = {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.strip() == "## Layering"
            continue
        if not inside or not line.startswith("|"):
            continue
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|")
                 .split("|")]
        if len(cells) < 2 or cells[0] in ("folder", "") or set(cells[0]) <= {"-"}:
            continue
        allowed, debts = set(), set()
        for entry in cells[1].split(","):
            entry = entry.strip().strip("`")
            if not entry or entry == "-":
                continue
            debt = entry.endswith("(debt)")
            name = entry.replace("(debt)", "").strip().strip("`")
            allowed.add(name)
            if debt:
                debts.add(name)
        rows[cells[0]] = (allowed, debts)
    return rows


def includes(root):
    """(file, line number, including folder, included folder) for every
    project include that crosses folders."""
    for top in SOURCE_FOLDERS:
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        target = match.group(1)
                        if target.startswith("tfm/"):
                            target = "runtime/include/" + target
                        if target.split("/")[0] not in SOURCE_FOLDERS:
                            continue  # generated headers, upstream's
                        source, included = folder_of(relative), folder_of(target)
                        if source != included:
                            yield relative, number, source, included


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--table", help="the table's file (default: "
                        "docs/architecture.md under the root)")
    parser.add_argument("--matrix", action="store_true",
                        help="print the includes between folders, a line "
                        "per pair (`from -> to: count`), and check nothing")
    args = parser.parse_args()
    if args.matrix:
        pairs = collections.Counter(
            (source, included)
            for _, _, source, included in includes(args.root))
        for (source, included), count in sorted(pairs.items()):
            print(f"{source} -> {included}: {count}")
        return 0
    table = read_table(args.table or os.path.join(args.root, "docs",
                                                  "architecture.md"))
    if not table:
        print("check_layering: no '## Layering' table found")
        return 1
    wrong, debts, crossings = [], collections.Counter(), 0
    for path, number, source, included in includes(args.root):
        crossings += 1
        allowed, debt = table.get(source, (set(), set()))
        if source not in table:
            wrong.append(f"{path}:{number}: folder {source} has no row in the "
                         f"layering table")
        elif included not in allowed:
            wrong.append(f"{path}:{number}: {source} may not include "
                         f"{included}")
        elif included in debt:
            debts[(source, included)] += 1
    for line in wrong:
        print(line)
    if wrong:
        print(f"check_layering: {len(wrong)} includes the layering table "
              f"(docs/architecture.md) does not allow")
        return 1
    print(f"check_layering: {crossings} includes across folders, all as the "
          f"table allows; debts still to remove: "
          + (", ".join(f"{a} -> {b} ({n})" for (a, b), n in sorted(debts.items()))
             or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
