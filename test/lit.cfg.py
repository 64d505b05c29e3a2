# lit configuration of the tfm tests.
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TFM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "openai-sdk"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfm_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%tfm_src_root", config.tfm_src_root))
config.substitutions.append(("%tfm_obj_root", config.tfm_obj_root))
# The static runtime and what it links against, for tests that link an app
# with a model compiled as a library (cmake/tfmc.pc.in says the same).
config.substitutions.append((
    "%tfm_runtime_libs",
    os.path.join(config.tfm_obj_root, "lib", "libtfmrt.a")
    + " -lopenblas -lutf8proc -lz -lm -lpthread"))

# As upstream: every FileCheck variable is scoped to its CHECK-LABEL block and
# every prefix must be used.
config.environment["FILECHECK_OPTS"] = (
    "-enable-var-scope --allow-unused-prefixes=false")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    [ToolSubst("tfm-opt", unresolved="fatal"),
     ToolSubst("tfmc", unresolved="fatal")],
    [config.tfm_tools_dir])

import sys
config.substitutions.append(("%python", sys.executable))

# %cc compiles and links test applications against the runtime: in a
# sanitizer build (scripts/test.sh --sanitize) the runtime is instrumented,
# so they use the same clang and sanitizers, and tests that cannot run
# under AddressSanitizer (virtual-memory limits: its shadow memory needs
# terabytes of address space) say `UNSUPPORTED: asan`.
if config.tfm_sanitize:
    config.available_features.add("asan")
    config.substitutions.append(
        ("%cc", config.tfm_c_compiler + " -fsanitize=address,undefined"))
    # Debian's LLVM and MLIR are not instrumented: their inline
    # BumpPtrAllocator code in our files poisons what theirs hands out
    # unpoisoned, so manual poisoning is ignored (allow_user_poisoning=0).
    config.environment["ASAN_OPTIONS"] = (
        "detect_leaks=1:allow_user_poisoning=0")
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    # CMake projects built against the install tree (examples/app).
    sanitizers = "-fsanitize=address,undefined"
    config.substitutions.append(
        ("%app_cmake_flags",
         f"-DCMAKE_C_COMPILER={config.tfm_c_compiler} "
         f"-DCMAKE_CXX_COMPILER={config.tfm_c_compiler.replace('clang', 'clang++')} "
         f"-DCMAKE_C_FLAGS={sanitizers} -DCMAKE_CXX_FLAGS={sanitizers} "
         f"-DCMAKE_EXE_LINKER_FLAGS={sanitizers}"))
else:
    config.substitutions.append(("%cc", "cc"))
    config.substitutions.append(("%app_cmake_flags", ""))

# Models split over MPI ranks (tfmc --ranks) run under mpirun: on this
# machine, as many processes as asked whatever the cores (--oversubscribe),
# as root in CI's containers. Tests say `REQUIRES: mpi`.
import shutil
if config.tfm_mpi and shutil.which("mpirun"):
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", "mpirun --allow-run-as-root --oversubscribe"))
    # An application linking a split model's archive adds these after the
    # runtime's.
    config.substitutions.append((
        "%tfm_mpi_libs",
        os.path.join(config.tfm_obj_root, "lib", "libtfmrt_mpi.a") + " "
        + os.path.join(config.tfm_obj_root, "lib", "libtfmrt.a") + " "
        + " ".join(config.tfm_mpi_libraries.split(";"))))

# Ranks over a real network stack (scripts/netns_ranks.py): network
# namespaces joined by veth pairs, which needs root (CI runs as root),
# `ip`, `tc` and `nsenter`. Tests say `REQUIRES: netns`; a probe namespace, a
# bridge and a veth pair are made and removed here.
if "mpi" in config.available_features and shutil.which("ip") and \
        shutil.which("tc") and shutil.which("nsenter") and os.geteuid() == 0:
    import subprocess
    probe = f"tfm-probe-{os.getpid()}"
    tag = os.getpid() % 100000
    steps = [["ip", "netns", "add", probe],
             ["ip", "link", "add", f"tfmpb{tag}", "type", "bridge"],
             ["ip", "link", "add", f"tfmpv{tag}", "type", "veth", "peer",
              "name", "eth0", "netns", probe]]
    made = all(subprocess.run(step, capture_output=True).returncode == 0
               for step in steps)
    for undo in (["ip", "link", "del", f"tfmpv{tag}"],
                 ["ip", "link", "del", f"tfmpb{tag}"],
                 ["ip", "netns", "del", probe]):
        subprocess.run(undo, capture_output=True)
    if made:
        config.available_features.add("netns")
        config.substitutions.append((
            "%netns_ranks",
            f"{sys.executable} "
            + os.path.join(config.tfm_src_root, "scripts", "netns_ranks.py")))
    else:
        lit_config.note("network namespaces cannot be made here: the tests "
                        "of ranks over a network are skipped")

# The pretrained checkpoints beside the repo (../shared/models). Tests that
# need them say `REQUIRES: shared-models` and are reported UNSUPPORTED (with
# this note) when the folder is absent.
shared_models = os.path.normpath(
    os.path.join(config.tfm_src_root, "..", "shared", "models"))
if os.path.isdir(os.path.join(shared_models, "stories260K")):
    config.available_features.add("shared-models")
    config.substitutions.append(("%shared_models", shared_models))
    # The evaluation text beside them (../shared/data).
    config.substitutions.append(
        ("%shared_data", os.path.join(os.path.dirname(shared_models), "data")))
else:
    lit_config.note(f"{shared_models} not found: the stories260K tests are skipped")
# OpenAI's Node SDK and zod, where scripts/install-deps.sh could install
# them.
if all(os.path.isfile(os.path.join(config.test_source_root, "tools",
                                   "openai-sdk", "node_modules", package,
                                   "package.json"))
       for package in ("openai", "zod")) and shutil.which("node"):
    config.available_features.add("openai-sdk")
