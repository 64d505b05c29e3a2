# Sourced by check_llama_cpp_*.sh with llama.cpp's source as $1 and a
# fixture folder's name as $FIXTURE: sets llama, here, root and work (a
# temporary folder, removed on exit unless KEEP_WORK is set), copies the
# fixture into $work/$FIXTURE with stories260K's tokenizer.model, and puts
# llama.cpp's gguf-py on PYTHONPATH. same_greedy_ids IDS GOLDEN_FILE
# compares a run's greedy ids with a golden's.
set -euo pipefail
llama=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
shared=$(cd "$root/../shared" && pwd)
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
cp -r "$here/Inputs/$FIXTURE" "$work/$FIXTURE"
cp "$shared/models/stories260K-hf/tokenizer.model" "$work/$FIXTURE/"
export PYTHONPATH="$llama/gguf-py:${PYTHONPATH:-}"

same_greedy_ids() {
  local golden
  golden=$(cat "$2")
  if [ "$(echo $1)" = "$(echo $golden)" ]; then
    echo "OK: greedy ids $1"
  else
    echo "MISMATCH: greedy ids $1, golden $golden"
    exit 1
  fi
}
