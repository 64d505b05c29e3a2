"""Checks Python's copy of the C ABI (python/tfmc/_abi.py) against the
runtime's headers, so that a change on one side fails CI.

  check_abi.py SRC_ROOT CC [ABI_PY]

Every ctypes structure of ABI_PY (default SRC_ROOT/python/tfmc/_abi.py),
named by convention (TensorDesc is tfm_tensor_desc), must have the C
structure's size and each of its fields the C field's offset and size:
a C program that includes the headers prints them (a field Python names
that C lacks fails to compile, and is reported so). ABI_VERSION and
MAX_RANK must be the headers' TFM_ABI_VERSION and TFM_MAX_RANK, and
DTYPE_NAMES and ROLE_NAMES must list exactly tfm_dtype's and tfm_role's
enumerators. Prints one line per mismatch and exits 1, or prints OK.
"""

import ctypes
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

HEADERS = ["tfm/tfm_model_abi.h", "tfm/tfm_runtime.h", "tfm/tfm_engine.h"]


def load(path):
    spec = importlib.util.spec_from_file_location("tfm_abi_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def c_name(python_name):
    return "tfm_" + re.sub(r"(?<!^)([A-Z])", r"_\1", python_name).lower()


def structures(module):
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, ctypes.Structure)
            and value.__module__ == module.__name__]


def c_layouts(source_root, cc, classes):
    """{(struct, field or None): (offset, size)} as the C compiler lays
    them out; or the compiler's error text."""
    lines = ["#include <stddef.h>", "#include <stdio.h>"]
    lines += [f"#include \"{header}\"" for header in HEADERS]
    lines.append("int main(void) {")
    for cls in classes:
        name = c_name(cls.__name__)
        lines.append(f"  printf(\"{name} - 0 %zu\\n\", sizeof({name}));")
        for field, *_ in cls._fields_:
            lines.append(f"  printf(\"{name} {field} %zu %zu\\n\", "
                         f"offsetof({name}, {field}), "
                         f"sizeof((({name} *)0)->{field}));")
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory() as work:
        program = os.path.join(work, "layout.c")
        binary = os.path.join(work, "layout")
        with open(program, "w") as f:
            f.write("\n".join(lines) + "\n")
        include = os.path.join(source_root, "runtime", "include")
        compiled = subprocess.run(cc.split() + ["-I", include, program, "-o",
                                                binary],
                                  capture_output=True, text=True,
                                  env=dict(os.environ, LC_ALL="C"))
        if compiled.returncode != 0:
            return compiled.stderr
        output = subprocess.run([binary], capture_output=True, text=True,
                                check=True).stdout
    layouts = {}
    for line in output.splitlines():
        struct, field, offset, size = line.split()
        layouts[(struct, None if field == "-" else field)] = (int(offset),
                                                              int(size))
    return layouts


def enumerators(text, prefix):
    return {name.lower(): int(value) for name, value in
            re.findall(rf"\b{prefix}(\w+) = (\d+)", text)}


def main():
    source_root, cc = sys.argv[1], sys.argv[2]
    abi_path = (sys.argv[3] if len(sys.argv) > 3 else
                os.path.join(source_root, "python", "tfmc", "_abi.py"))
    abi = load(abi_path)
    classes = structures(abi)
    problems = []
    layouts = c_layouts(source_root, cc, classes)
    if isinstance(layouts, str):
        missing = sorted(set(re.findall(r"has no member named [‘'](\w+)[’']",
                                        layouts)))
        problems.append("the C compiler refuses the layout program"
                        + (f" (fields C lacks: {', '.join(missing)})"
                           if missing else ":\n" + layouts))
        layouts = {}
    for cls in classes if layouts else []:
        name = c_name(cls.__name__)
        size = layouts[(name, None)][1]
        if ctypes.sizeof(cls) != size:
            problems.append(f"{cls.__name__}: {ctypes.sizeof(cls)} bytes, "
                            f"{name} has {size}")
        for field, *_ in cls._fields_:
            ours = getattr(cls, field)
            offset, size = layouts[(name, field)]
            if (ours.offset, ours.size) != (offset, size):
                problems.append(
                    f"{cls.__name__}.{field}: offset {ours.offset} size "
                    f"{ours.size}, {name}.{field} has offset {offset} size "
                    f"{size}")
    headers = "".join(
        open(os.path.join(source_root, "runtime", "include", h)).read()
        for h in HEADERS)
    for python_name, c_macro in [("ABI_VERSION", "TFM_ABI_VERSION"),
                                 ("MAX_RANK", "TFM_MAX_RANK")]:
        defined = re.search(rf"#define {c_macro} (\d+)", headers)
        if not defined or int(defined.group(1)) != getattr(abi, python_name):
            problems.append(f"{python_name} = {getattr(abi, python_name)}, "
                            f"{c_macro} is "
                            f"{defined.group(1) if defined else 'undefined'}")
    for python_name, prefix in [("DTYPE_NAMES", "TFM_DTYPE_"),
                                ("ROLE_NAMES", "TFM_ROLE_")]:
        ours = {name: value for value, name in getattr(abi, python_name).items()}
        theirs = enumerators(headers, prefix)
        if ours != theirs:
            problems.append(f"{python_name} {sorted(ours.items())} differs "
                            f"from the {prefix}* enumerators "
                            f"{sorted(theirs.items())}")
    for problem in problems:
        print("MISMATCH:", problem)
    if problems:
        return 1
    print(f"OK: {len(classes)} structures, their fields, the ABI version, "
          f"the maximum rank, the dtypes and the roles match the headers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
