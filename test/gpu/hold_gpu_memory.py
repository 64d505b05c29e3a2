#!/usr/bin/env python3
"""Runs a command while this process holds all but LEAVE MiB of GPU 0's
memory, and checks that the command fails cleanly for want of it: exit
status 1 (not a signal, not a hang) and a message naming GPU memory.

    hold_gpu_memory.py LEAVE_MIB COMMAND...

Talks to the CUDA driver through ctypes (the runtime's own path:
libcuda.so.1), so it needs no CUDA toolkit and no PyTorch. Prints the
command's last error line and exits 0 when the failure was clean."""
import ctypes
import subprocess
import sys


def main():
    leave = int(sys.argv[1]) << 20
    command = sys.argv[2:]
    cuda = ctypes.CDLL("libcuda.so.1")

    def ok(result, what):
        if result != 0:
            sys.exit(f"hold_gpu_memory: {what}: CUDA error {result}")

    ok(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    ok(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    context = ctypes.c_void_p()
    ok(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device),
       "cuDevicePrimaryCtxRetain")
    ok(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    ok(cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)),
       "cuMemGetInfo")
    held = ctypes.c_uint64()
    ok(cuda.cuMemAlloc_v2(ctypes.byref(held), ctypes.c_size_t(free.value - leave)),
       "cuMemAlloc")
    print(f"holding {(free.value - leave) >> 20} of {total.value >> 20} MiB, "
          f"{leave >> 20} MiB left free", flush=True)
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    errors = [line for line in run.stderr.splitlines() if line.strip()]
    print(f"exit {run.returncode}: {errors[-1] if errors else '(no message)'}")
    if run.returncode != 1 or not any("GPU memory" in line for line in errors):
        sys.exit("hold_gpu_memory: the command did not fail cleanly for want "
                 "of GPU memory")
    print("out of GPU memory: failed cleanly")


if __name__ == "__main__":
    main()
