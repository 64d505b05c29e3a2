#!/usr/bin/env bash
# check.sh PYTHON TFMC NAME WORK KEPT_TOL: the checks of a real-shaped fixture
# (make_fixture.py NAME, made in WORK), which each NAME.test runs and
# FileChecks. It prints compare_logits.py's three verdicts and stops at the
# first failure:
#   - the numerics in f32 (the bf16 weights widened exactly): every
#     position through @forward, and through the cache one step at a time,
#     within 5e-4 of the NumPy transcription;
#   - as published: the weights kept as the checkpoint stores them, their
#     products widening bf16 exactly (TFM_BF16_DOT=0: on CPUs with
#     AVX512-BF16 the default rounds the activations to bf16 instead, as
#     llama.cpp does), within KEPT_TOL;
#   - --stats' cache bytes as the config's arithmetic has them for 1024
#     positions (make_fixture.py's NAME.stats).
set -euo pipefail
python=$1 tfmc=$2 name=$3 work=$4 kept_tol=$5
here=$(cd "$(dirname "$0")" && pwd)
compare() { "$python" "$here/../compare_logits.py" "$@"; }
m=$work/model
rm -rf "$work" && mkdir -p "$work"
"$python" "$here/make_fixture.py" "$name" "$m"

"$tfmc" -q "$m" --max-context 1024 --weights-dtype f32 -o "$work/f32"
"$work/f32" --tokens "$(cat "$m.tokens")" -n 0 --logits "$work/f32.logits"
compare "$work/f32.logits" "$m.logits.bin" --tol 5e-4
"$work/f32" --tokens "$(cat "$m.prefill")" --force-tokens "$(cat "$m.forced")" \
  --step-logits "$work/f32.steps" > /dev/null
compare "$work/f32.steps" "$m.logits.bin" --expected-rows "$(cat "$m.rows")" \
  --row-size "$(cat "$m.vocab")" --tol 5e-4

"$tfmc" -q "$m" --max-context 1024 -o "$work/kept"
TFM_BF16_DOT=0 "$work/kept" --tokens "$(cat "$m.tokens")" -n 0 \
  --logits "$work/kept.logits"
compare "$work/kept.logits" "$m.logits.bin" --tol "$kept_tol"
"$work/kept" --tokens "$(cat "$m.prefill")" -n 4 --stats 2> "$work/stats" > /dev/null
grep -qF "$(cat "$m.stats")" "$work/stats" || {
  echo "$name: --stats gives $(cat "$work/stats"), the arithmetic $(cat "$m.stats")"
  exit 1
}
