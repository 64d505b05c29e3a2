#!/usr/bin/env bash
# install-python.sh - makes the Python package in python/tfmc importable by
# Debian's python3 (/usr/bin/python3, with python3-numpy): a tfmc.pth
# naming python/ in its site-packages. The package is ctypes over the model
# libraries' runtime: nothing to build. Run by build.sh; idempotent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
site="$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
if mkdir -p "$site" 2> /dev/null && [ -w "$site" ]; then
  echo "$root/python" > "$site/tfmc.pth"
else
  echo "install-python: $site is not writable: use PYTHONPATH=$root/python" >&2
fi
