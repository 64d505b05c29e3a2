#!/usr/bin/env bash
# The token mask's cost (issue 74): decode tok/s of a random-weight model
# with a Qwen2.5-sized vocabulary (151,936 rows, a byte-level BPE
# vocabulary of that size from make_big_vocab.py), without a grammar and
# with llama.cpp's JSON grammar (tfm-serve's response_format json_object)
# and a fixed-keys JSON grammar, sampled at temperature 1 (strings of any
# length: the mask's cache misses as well as its hits), round robin; and
# the time to the first token, which includes reading the vocabulary into
# the grammar's trie. The model is small (hidden 256, 2 layers) so that the
# mask's time shows: its per-token cost is the difference of the decode
# times, to be set against a real model's decode time.
#
#   bash bench/grammar_mask.sh [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/make_big_vocab.py" "$work/vocab" 151936 \
  "$root/../shared/data/tinystories-eval.txt" > /dev/null
python3 "$root/test/e2e/write_gguf.py" "$work/model.gguf" \
  --random 256,2,4,2,512,151936 --gpt2-tokenizer "$work/vocab"
"$root/build/bin/tfmc" -q "$work/model.gguf" -o "$work/model"
sed -n '/kJsonObjectGrammar = R"(/,/^)";/p' "$root/serve/OpenAiApi.cpp" |
  sed '1s/.*R"(//; $d' > "$work/json.gbnf"
cp "$root/test/e2e/Inputs/grammars/person.gbnf" "$work/person.gbnf"
run() { # grammar-name -> "decode_tok_per_s seconds_to_first_token"
  local options=()
  [ "$1" != none ] && options=(--grammar-file "$work/$1.gbnf")
  local start end
  start=$(date +%s.%N)
  "$work/model" --prompt "{" -n 1 --temperature 1 --seed 1 "${options[@]}" \
    > /dev/null 2>&1
  end=$(date +%s.%N)
  local first; first=$(echo "$end - $start" | bc -l)
  local stats
  stats=$("$work/model" --prompt "{" -n 256 --temperature 1 --seed 1 \
    --ignore-eos --stats "${options[@]}" 2>&1 >/dev/null | tail -1)
  local tps; tps=$(echo "$stats" | sed 's/.*"decode_tokens_per_s": *\([0-9.]*\).*/\1/')
  echo "$tps $first"
}
declare -A tps first
for r in $(seq "$rounds"); do
  for g in none json person; do
    read -r t f < <(run "$g")
    tps[$g]+="$t "
    first[$g]+="$f "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${tps[none]}" | median)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
for g in none json person; do
  t=$(echo "${tps[$g]}" | median); f=$(echo "${first[$g]}" | median)
  cost=$(echo "1000 / $t - 1000 / $base" | bc -l)
  printf "%-7s decode %8.1f tok/s  mask %6.3f ms/token  run with 1 token %5.3f s\n" \
    "$g" "$t" "$cost" "$f"
done
