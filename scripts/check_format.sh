#!/usr/bin/env bash
# check_format.sh - the tree's formatting rule (docs/architecture.md's
# "Formatting"): the C and C++ lines a change touched are as clang-format of
# the project's LLVM (22) lays them out with .clang-format. Prints what
# clang-format would change and exits 1, or prints a summary. .ci/run runs
# it on the change being landed.
#
#   check_format.sh [--fix] [SRC_ROOT [BASE]]
#
# BASE: the revision the change starts from (default: $TFM_FORMAT_BASE, else
# HEAD's parent); the change is BASE against the working tree, so what is
# not committed yet counts. --fix rewrites those lines in place instead.
set -euo pipefail
fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
formatter=clang-format-diff-22
command -v "$formatter" >/dev/null || {
  echo "check_format: $formatter not found (scripts/install-deps.sh installs it)" >&2
  exit 2
}
base="${2:-${TFM_FORMAT_BASE:-}}"
if [ -z "$base" ]; then
  if ! base="$(git rev-parse --verify --quiet 'HEAD~1')"; then
    echo "check_format: HEAD has no parent (a shallow clone?): no change to check"
    exit 0
  fi
fi
git rev-parse --verify --quiet "$base^{commit}" >/dev/null || {
  echo "check_format: '$base' is not a revision here" >&2
  exit 2
}
changes="$(git diff -U0 --no-color "$base" -- '*.c' '*.h' '*.cpp')"
files="$(git diff --name-only "$base" -- '*.c' '*.h' '*.cpp' | wc -l)"
if [ "$fix" = 1 ]; then
  printf '%s\n' "$changes" | "$formatter" -p1 -i
  echo "check_format: formatted the changed lines of $files files"
  exit 0
fi
# clang-format-diff exits 1 when it has a difference to show.
status=0
report="$(printf '%s\n' "$changes" | "$formatter" -p1)" || status=$?
if [ "$status" -gt 1 ]; then
  echo "check_format: $formatter failed (exit $status)" >&2
  exit 2
fi
if [ -n "$report" ]; then
  printf '%s\n' "$report"
  echo "check_format: $(printf '%s\n' "$report" | grep -c '^+++ ') of $files" \
    "changed files differ from clang-format-22 on their changed lines" \
    "(scripts/check_format.sh --fix)"
  exit 1
fi
echo "check_format: the changed lines of $files files as clang-format-22 lays them out"
