//===- Passes.td - tfm-level transforms --------------------*- tablegen -*-===//

#ifndef TFM_PASSES_PASSES_TD
#define TFM_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def KVCachePass : Pass<"tfm-kv-cache", "ModuleOp"> {
  let summary = "Derive @prefill and @decode with an explicit KV cache from @forward";
  let description = [{
    A causal decoder's `@forward(tokens) -> logits` recomputes every
    position's keys and values for each new token. This pass adds

    - `@prefill(tokens: tensor<?xi32>, start: index, slot: index, cache) ->
      (logits of the last position: tensor<1xVxf32>, cache)`: runs the
      tokens as positions `[start, start + n)`, appending each layer's keys
      and values to the cache at `[slot, slot + n)` (`tfm.kv_cache_append`)
      and attending over the cached `[0, slot + n)` (`tfm.kv_cache_read`);
    - `@decode(token: tensor<1xi32>, position: index, slot: index, cache) ->
      (logits, cache)`: one token, so a new token costs O(context).

    Positions and slots are equal until the runtime slides the cache of a
    sliding-window model: keys older than the window are dropped and the
    rest moved to the front, so such a cache holds only the window (keys are
    cached after RoPE, so they keep their positions).

    The cache is one tensor `[layers, 2, capacity, kv_heads, head_dim]`
    (grouped-query and multi-query models cache only their KV heads) with a
    capacity fixed at compile time: `max-context`, or the `tfm.max_context`
    attribute the frontend puts on `@forward`. `@forward` stays for
    whole-sequence use. The pass refuses, naming the op, what it cannot
    cache: bidirectional or biased attention, keys from outside the token
    sequence (cross-attention), positions it cannot follow, ops it does not
    know to be row-wise.
  }];
  let options = [
    Option<"maxContext", "max-context", "int64_t", /*default=*/"0",
           "Cache capacity in positions (0: the tfm.max_context attribute)">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // TFM_PASSES_PASSES_TD
