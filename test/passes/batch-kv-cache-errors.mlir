// RUN: tfm-opt %s -split-input-file -tfm-batch-kv-cache -verify-diagnostics

// No @prefill to batch: tfm-kv-cache runs first.
// expected-error @below {{tfm-batch-kv-cache: needs @forward and the @prefill tfm-kv-cache derived from it}}
module {
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?xi32> {
  return %tokens : tensor<?xi32>
}
}

// -----

// Derived already.
module {
// expected-error @below {{tfm-batch-kv-cache: @prefill_batch already exists}}
func.func @prefill_batch() {
  return
}
}

// -----

// A @prefill whose fourth argument is no cache.
module {
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?xi32> {
  return %tokens : tensor<?xi32>
}
// expected-error @below {{tfm-batch-kv-cache: expected @prefill's fourth argument to be its self-attention cache}}
func.func @prefill(%tokens: tensor<?xi32>) -> tensor<?xi32> {
  return %tokens : tensor<?xi32>
}
}
