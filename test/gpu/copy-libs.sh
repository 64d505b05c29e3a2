#!/usr/bin/env bash
# copy-libs.sh DEST EXECUTABLE... - copies every shared library the
# executables load into DEST, except the C library's own (the GPU machine's
# must be used) and the CUDA driver (opened at run time): what a bare GPU
# machine may lack to run models compiled here.
set -euo pipefail
dest="$1"; shift
mkdir -p "$dest"
for exe in "$@"; do
  ldd "$exe" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$dest/"; done
