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
    capacity fixed at compile time: `max-context`, or the `tfm.model`'s `max_context`
    attribute the frontend puts on `@forward`. `@forward` stays for
    whole-sequence use.

    Where layers' windows differ (GPT-Neo's local layers beside global
    ones), @prefill's cache keeps a windowed layer's last `window`
    positions only, in a ring (`tfm.kv_ring_append`, `tfm.kv_ring_read`),
    as many rings to a plane of the cache as its capacity holds: the first
    dimension counts planes, one per global layer and then the rings'.
    The batched entry points keep every position of every layer (the
    engine's pages are positions).

    An encoder-decoder's `@forward(source, decoder ids)` also gets
    `@encode(source, cross cache) -> (encoder output, cross cache)`: the
    encoder and every decoder layer's cross-attention keys and values, run
    once per input; `@prefill` and `@decode` then read that cross cache
    (and how many source positions it holds) instead of the encoder.
    Where the module's `#tfm.generation` lists `alignment_heads` (Whisper),
    it also gets `@align(tokens, cross cache, encoded length) -> [tokens,
    heads, source positions]`: those cross-attention heads' probabilities
    over the tokens teacher-forced from position 0, which the runtime
    aligns to the audio for word timestamps.

    With `decode-batch` (the default) the pass also derives
    `@decode_batch(tokens: tensor<?xi32>, positions: tensor<?xi32>,
    sequences: tensor<?xi32>, cache: [?, layers, 2, capacity, kv_heads,
    head_dim]) -> (logits: [?, vocab], cache)`: one token of each of B
    sequences (beams, or a server's requests), row b at `positions[b]` in
    sequence `sequences[b]` of a batched cache. The weights are read once
    for all rows; each self-attention becomes an `scf.for` over the rows,
    appending to and attending over the row's own sequence. Positions are
    cache slots there: a batched cache is never slid.

    With `verify` a decoder also gets `@verify`, @prefill with every
    position's logits (`tensor<?xVxf32>`): a speculative step writes its
    drafted tokens to the cache in one call and checks each; the runtime
    drops the rejected ones by shortening the cache, so models whose cache
    cannot go back (rings, recurrent states, encoder-decoders) are refused.
    With `prefill-batch` too, `@verify_batch`: @prefill_batch with every
    token's logits (`[?, vocab]`), a server's speculative step.

    With `prefill-batch` (the default) a decoder also gets
    `@prefill_batch(tokens: tensor<?xi32>, positions: tensor<?xi32>,
    sequences: tensor<?xi32>, lengths: tensor<?xi32>, cache: [?, layers, 2,
    capacity, kv_heads, head_dim]) -> (logits: [?, vocab], cache)`: chunks
    of consecutive tokens of several sequences packed end to end, chunk b
    the next `lengths[b]` tokens of sequence `sequences[b]` at `positions`
    (one per token), with the logits of each chunk's last token. A server's
    step runs in it whole (prompt chunks and generated tokens, which are
    chunks of one), reading each weight once; each self-attention becomes
    an `scf.for` over the chunks, each appending to its own sequence and
    attending causally as @prefill does, and the final norm and LM head run
    on each chunk's last row only.

    Where the module names an image placeholder (`tfm.image_token`: a
    vision-language model such as LLaVA), a decoder also gets
    `@prefill_embeddings(rows: tensor<?xhiddenxf32>, start, slot, cache)`:
    @prefill with its embedding lookup replaced by `rows` (an image's
    tokens from `@encode_image`), which the runtime runs at the prompt's
    placeholders, and with `prefill-batch` the engine's
    `@prefill_batch_embeddings` likewise; they must read their token ids
    only to look them up and count them.

    With `kv-dtype=bf16` or `f16` the self-attention cache stores keys and
    values rounded to that type, half of f32's bytes; with `kv-dtype=int8`
    each position's keys and values of a KV head as int8 codes with an f32
    scale, `[layers, 2, capacity, kv_heads, head_dim + 4]` i8, a quarter of
    f32's bytes. Either way `tfm.quantize_rows` comes before the append and
    `tfm.dequantize_rows` after the read, which the CPU's attention kernel
    reads fused (a cross-attention cache stays f32).

    The pass refuses, naming the op, what it cannot cache: bidirectional or
    biased attention, causal or biased cross-attention, positions it cannot
    follow, ops it does not know to be row-wise.
  }];
  let options = [
    Option<"maxContext", "max-context", "int64_t", /*default=*/"0",
           "Cache capacity in positions (0: the max_context of tfm.model)">,
    Option<"decodeBatch", "decode-batch", "bool", /*default=*/"true",
           "Also derive @decode_batch, one step of several sequences">,
    Option<"prefillBatch", "prefill-batch", "bool", /*default=*/"true",
           "Also derive @prefill_batch (decoders): chunks of several "
           "sequences in one call">,
    Option<"verify", "verify", "bool", /*default=*/"false",
           "Also derive @verify (decoders whose cache can drop positions: "
           "no rings, no recurrent states): @prefill returning every "
           "position's logits, for speculative decoding">,
    Option<"align", "align", "bool", /*default=*/"true",
           "Derive @align where the module lists alignment heads (a model "
           "split over ranks has none: its heads are split)">,
    Option<"kvDtype", "kv-dtype", "std::string", /*default=*/"\"f32\"",
           "Storage of the self-attention cache: f32, bf16, f16, or int8 "
           "(rows of codes with a scale each)">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def BatchKVCachePass : Pass<"tfm-batch-kv-cache", "ModuleOp"> {
  let summary = "Derive @decode_batch and @prefill_batch beside a cached "
                "@prefill";
  let description = [{
    The batched entry points of tfm-kv-cache (see its `decode-batch` and
    `prefill-batch`), derived later, from a module that already has
    `@forward` and the `@prefill` tfm-kv-cache made: the capacity and the
    stored element type are `@prefill`'s cache's.

    A model split over ranks needs them derived after its partition:
    upstream `shard-partition` partitions a function's top level only, and
    the batched entry points hold each attention in an `scf.for` over
    sequences. After the partition `@forward` is the rank's program, whose
    all-reduces and gathers (`shard.all_reduce`, `shard.all_gather` of
    columns) act on each position alone, so the rank's batched entry
    points follow from it as the whole model's do from its `@forward`.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def PackSequencesPass : Pass<"tfm-pack-sequences", "ModuleOp"> {
  let summary = "Derive @<name>_batch over sequences packed end to end";
  let description = [{
    An encoder's entry point (`@encode`, `@embed`, `@classify`, ...) takes
    one sequence. For each such public function this pass adds
    `@<name>_batch`, which takes the token ids (and token types) of several
    sequences end to end and, as its last argument, their lengths
    (`tensor<?xi32>`, role `sequence_lengths`): every GEMM then runs over
    all the batch's tokens at once, and no work is spent on padding. The
    clone gives the lengths to the ops that see sequence boundaries:
    `tfm.position_ids` (positions restart per sequence), `tfm.attention`
    (a query sees its own sequence's keys only) and `tfm.pool` (one row per
    sequence: `[d]` results become `[sequences, d]`). Every other op that
    reads the tokens must act on each position alone (Tfm_PositionWise).

    Functions this does not hold for are left as they are: causal decoders
    (their batches come with their caches), functions with caches or
    without token ids, and any with an op that mixes positions in another
    way (named in a remark).
  }];
}

def BatchImagesPass : Pass<"tfm-batch-images", "ModuleOp"> {
  let summary = "Derive @<name>_batch over a batch of images";
  let description = [{
    An image model's entry point (`@classify`, `@encode` of a vision
    transformer) takes one image, `[C, H, W]` features. For each public
    function with one static-shaped features input and one static-shaped
    result, this pass adds `@<name>_batch`, which takes `[images, C, H, W]`
    and returns `[images, ...]`: an `scf.for` runs the function's body on
    each image in turn and inserts its result as row `i`. Weights and
    constants are taken once, before the loop.

    Images are run one after another rather than packed into one set of
    GEMM rows (as tfm-pack-sequences packs text): one image already gives
    the GEMMs enough rows (ViT-Base: 197), and packs of more than about 160
    rows measured slower per row than smaller ones (BERT-base; see
    kPackTokens in runtime/cli/main_call.c), since their activations no longer
    stay in cache while the weights stream past.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def LoraSlotsPass : Pass<"tfm-lora-slots", "ModuleOp"> {
  let summary = "Adapter slots: each adapted projection plus the low-rank "
                "update of the adapter its row runs with";
  let description = [{
    For run-time LoRA adapters: every `tfm.linear` whose weight is a layer's
    (its checkpoint name has a layer number, `model.layers.3.mlp.up_proj.
    weight`; the LM head and embeddings have none) and whose module (the
    name's part before `.weight`, `up_proj`) is among `targets` (empty: all
    of them, PEFT's "all-linear") is followed by a `tfm.lora` of its input
    and output, which its users read instead. The module gets `tfm.lora =
    {slots, rank, targets = [weight names], features = [in, out, ...]}`, the
    table the runtime loads adapters by (tfm_model_desc.lora): each target's
    `A [rank, in]` and `B [out, rank]` in each of `slots` slots.

    Runs on `@forward` before the cache and batch derivations, which keep
    every `tfm.lora` on the rows of its entry point's tokens (they pick the
    rows a call returns logits of below it, never above), and before the
    fusions (a gate or up projection with an update is not joined into a
    gated one; joined Q, K and V keep their updates on the slices).
  }];
  let options = [
    Option<"slots", "slots", "int64_t", /*default=*/"4",
           "Adapters loaded at once">,
    Option<"rank", "rank", "int64_t", /*default=*/"16",
           "The largest adapter rank a slot holds">,
    Option<"targets", "targets", "std::string", /*default=*/"\"\"",
           "Comma-separated module names to adapt (empty: every projection "
           "of the layers)">
  ];
}

def FuseQKVPass : Pass<"tfm-fuse-qkv", "func::FuncOp"> {
  let summary = "Join sibling head projections (Q, K, V) into one GEMM";
  let description = [{
    `tfm.linear` ops that read the same input and split their results into
    heads of one head_dim (the query, key and value projections, grouped-
    query shapes included) become one `tfm.linear` over the weights joined
    with `tfm.concat` (and biases, when all have one), whose result the
    heads are sliced from. Codegen places the joined weights back to back
    in the weight blob, so the join costs nothing at run time; the GEMM
    reads the input once and runs one wider product. Projections whose
    checkpoint stores them in different K-quants (`tfm.checkpoint_dtype`
    `q4_k` beside `q6_k`, as llama.cpp's Q4_K_M files do) are not joined:
    a join is stored in one format, which would be int8 for both.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def ExpandExpertsPass : Pass<"tfm-expand-experts", "ModuleOp"> {
  let summary = "A mixture of experts as projections of each expert's tokens";
  let description = [{
    Each `tfm.moe` becomes `tfm.route` (each token's top-k experts and
    weights), then for each expert `tfm.expert_rows` (its tokens) and, under
    an `scf.if` that skips an expert no token chose, `tfm.take_rows`, its
    gate, up and down `tfm.linear`s and `tfm.scatter_add_rows` back into the
    output: one GEMM per expert over its tokens in a prefill, and in a
    decode step only the chosen experts' weights are read. Runs after the
    cache derivations (which see one position-wise op) and before the
    fusions and weight storage, which then treat each expert's projections
    as any other.

    With `share-functions`, a mixture that several functions hold (the same
    expert weights and attributes: each layer's in every entry point the
    cache derivations made) has its routed experts expanded once, in a
    private function `@routed_experts` taking the rows, their experts and
    their weights; each holder keeps its routing and shared expert and
    calls it. Compiling a model of many experts then costs one expansion a
    layer, not one an entry point.

    With `ranks` = N > 1 (after the partition of a model split over N
    ranks), a mixture whose E experts are whole on every rank, E a multiple
    of N, is split by experts: every rank runs E/N of them, in the places
    of experts [0, E/N), after subtracting rank·E/N from the routed ids
    (`shard.process_linear_index`), and `shard.all_reduce` sums the ranks'
    outputs. A shared expert is split by features, as a dense MLP (gate and
    up rows, down columns: `tfm.split_over_ranks`), and its part joins the
    sum before the all-reduce; where its weights are read elsewhere or its
    width does not divide, it is added whole after. The module's
    `tfm.rank_weight_sources` names, for each weight of those places, the
    checkpoint tensor each rank holds there; the other experts' weights are
    no longer read, so no rank stores them.
  }];
  let options = [
    Option<"shareFunctions", "share-functions", "bool", /*default=*/"false",
           "Expand a mixture that several functions hold once, in a "
           "function they call">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Ranks of the module's shard.grid: each runs 1/ranks of every "
           "mixture's experts (expert parallelism), their sums all-reduced">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::shard::ShardDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def FuseMLPPass : Pass<"tfm-fuse-mlp", "func::FuncOp"> {
  let summary = "Activation epilogues and gated MLPs in the projection";
  let description = [{
    `tfm.activation` of a `tfm.linear` (used only there) becomes the linear's
    `activation` epilogue, applied with the bias in one pass over the GEMM's
    output. A gated MLP, `act(x·W_gateᵀ) * (x·W_upᵀ)` (SwiGLU, GeGLU), becomes
    one `gated` linear over `[W_gate; W_up]`: one GEMM, then one pass that
    applies the activation and the gate multiply.
  }];
}

def ConvolutionsAsGemmPass : Pass<"tfm-convolutions-as-gemm", "func::FuncOp"> {
  let summary = "2-D convolutions as image windows and a tfm.linear";
  let description = [{
    A `tfm.conv2d` becomes `tfm.image_windows` (each output pixel's window,
    flattened as the weight is) and a `tfm.linear` with the convolution's
    `[out, C * k * k]` weight and bias; a 1x1 convolution of stride 1 is the
    linear on the feature map's rows alone. The weight is then stored and
    multiplied as any projection's (`--weights-dtype`, panels, the GEMM
    kernels) instead of by linalg's convolution loops.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def FuseNormPass : Pass<"tfm-fuse-norm", "func::FuncOp"> {
  let summary = "Residual adds fused into the following LayerNorm/RMSNorm";
  let description = [{
    A `tfm.rms_norm` or `tfm.layer_norm` of a `tfm.add` becomes
    `tfm.add_rms_norm` / `tfm.add_layer_norm`, which returns the sum (the
    residual stream, for later adds) and the normalized rows; codegen
    computes the sum and the first row statistic in one pass.
  }];
}

def QuantizeWeightsPass : Pass<"tfm-quantize-weights", "ModuleOp"> {
  let summary = "Store the weight matrices in bf16, f16, or int8/int4 blocks";
  let description = [{
    Gives the matrices the model multiplies by and looks rows up in (the
    weights of `tfm.linear`, directly or joined with `tfm.concat`, and the
    tables of `tfm.embedding`) a narrower storage type, and reads them
    through `tfm.dequantize`:

    - `bf16`, `f16`: the float type (a checkpoint stored that way keeps its
      values exactly);
    - `int8`: `#tfm.block_quant<q8_0>` (blocks of 32 with an f16 scale:
      8.5 bits a weight);
    - `int8-channel`: `#tfm.block_quant<q8_channel>` (int8 per channel:
      q8_0's blocks with one scale a row, whose kernels quantize the
      activations per row and scale a row's integer sums once);
    - `int4`: `#tfm.block_quant<q4_0>` (4.5 bits a weight);
    - `int4-min`: `#tfm.block_quant<q4_1>` (a minimum per block too:
      5 bits a weight);
    - `checkpoint`: each weight's `tfm.checkpoint_dtype` attribute, which
      the frontend sets on a declaration whose checkpoint stores it
      narrower than f32 (a BF16 safetensors file: `bf16`; a GGUF Q4_0
      tensor: `int4`; Q4_1: `int4-min`; Q8_0: `int8`; Q4_K, Q5_K, Q6_K and
      MXFP4: `q4_k`, `q5_k`, `q6_k` and `mxfp4`, that is
      `#tfm.block_quant<q4_k>`, `<q5_k>`, `<q6_k>` and `<mxfp4>`, which
      only such tensors can be stored in), so that the blob keeps it as
      stored.

    Embedding tables and the LM head (a linear whose result an entry point
    returns, or a weight also looked up as a table) take `edge-dtype`
    instead (by default int8 when `dtype` is int4 or int4-min, as
    llama.cpp's Q4 files keep them at more bits; `dtype` otherwise).
    Weights whose checkpoint name matches the `keep` regex, vectors (norm gains, biases) and
    weights read any other way stay f32. `dtype-for=REGEX=DTYPE` gives the
    weights whose names match REGEX another dtype (llama.cpp's Q4_K_M keeps
    the value and down projections at more bits: `dtype=int4
    dtype-for=v_proj|down_proj=int8`). A join of weights is stored in
    one format and stays a join when all its parts but the last have a
    multiple of 32 rows: parts given different formats all take the
    widest of them (f32 > bf16, f16 > int8 > int4-min > int4; bf16 beside
    f16 gives f32; q4_k counts as the int4-min that holds its blocks, q5_k,
    q6_k and mxfp4 as int8).
    Otherwise each part is dequantized alone and the f32 parts joined.

    ```mlir
    // before
    %w = tfm.weight @up : tensor<1376x512xf32>
    %y = tfm.linear %x, %w : tensor<?x512xf32>, tensor<1376x512xf32> -> tensor<?x1376xf32>
    // after, dtype=int8
    %w = tfm.weight @up : tensor<1376x512xi8, #tfm.block_quant<q8_0>>
    %f = tfm.dequantize %w : tensor<1376x512xi8, #tfm.block_quant<q8_0>> -> tensor<1376x512xf32>
    %y = tfm.linear %x, %f : tensor<?x512xf32>, tensor<1376x512xf32> -> tensor<?x1376xf32>
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"int8\"",
           "Storage of the weight matrices: bf16, f16, int8, int8-channel, "
           "int4, int4-min or checkpoint">,
    Option<"edgeDtype", "edge-dtype", "std::string", /*default=*/"\"\"",
           "Storage of embedding tables and the LM head: f32, bf16, f16, "
           "int8, int4 or int4-min (empty: int8 for int4 and int4-min, else "
           "dtype)">,
    Option<"keep", "keep", "std::string", /*default=*/"\"\"",
           "Weights whose names match this regex stay f32">,
    Option<"dtypeFor", "dtype-for", "std::string", /*default=*/"\"\"",
           "REGEX=DTYPE: weights whose names match take DTYPE instead "
           "(after keep)">
  ];
}

def ShardTensorParallelPass : Pass<"tfm-shard-tensor-parallel", "ModuleOp"> {
  let summary = "Plan tensor parallelism over N ranks as upstream shard annotations";
  let description = [{
    Megatron-LM's split of a transformer over `ranks` processes, written as
    the upstream `shard` dialect's annotations, which `shard-partition` then
    carries out (with the tfm ops' ShardingInterface, ir/TfmSharding.cpp):

    - attention is split by heads: the query, key and value projections'
      weight rows (and biases), the rotary embeddings, the attention and the
      KV cache (its heads axis; each rank caches its own heads). KV heads
      are split too, so a grouped-query group stays on one rank; `ranks`
      must divide the KV heads (they are not replicated);
    - the MLP's up and gate projections are split by rows, its activation
      and gate product follow;
    - the attention output and MLP down projections take the split input
      and their weights' columns: each rank's product is a partial sum, and
      `shard.all_reduce` sums them (one per block of each layer). Their
      bias is held by rank 0 alone (`tfm.partial_over_ranks`);
    - embeddings, norms and the LM head are replicated: a decoded token then
      needs no gather of the logits.

    The module gets `shard.grid @ranks(shape = N)`; every tensor of every
    entry point is annotated (`shard.shard`), as shard-partition requires;
    the weights' declarations record their split (`tfm.split_over_ranks`).
    A model outside this plan is refused with the reason.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "2", "Processes the model is split over">,
  ];
  let dependentDialects = ["shard::ShardDialect"];
}

def PipelineStagesPass : Pass<"tfm-pipeline-stages", "ModuleOp"> {
  let summary = "Split a decoder's layers into pipeline stages, one an MPI rank";
  let description = [{
    Runs on `@forward` before tfm-kv-cache, which derives the cached entry
    points from the result. The L layers go into `stages` stages of L/P
    contiguous layers; every rank runs the same code, the first stage's
    layers, over its own weights. Stage s runs on rank (s + 1) mod P: the
    last stage on rank 0, which answers, so that the logits never travel
    and rank 0 can hand every rank its next call before its own part of
    the last one (the batch engine's micro-batches). Stage s's weight blob
    holds layer s·L/P + i in the place of layer i
    (`tfm.rank_weight_sources`, listed by rank), and its KV cache has L/P
    layers. With `ranks` tensor-parallel ranks a stage (--ranks N
    --pipeline-stages P), stage s runs on the N ranks [g·N, (g + 1)·N) of
    group g = (s + 1) mod P, and the sources are listed by MPI rank (group
    by group), so that tensor rank t of each group holds its stage's
    layers, split as tensor parallelism splits them; the module's
    `tfm.pipeline_stages` tells codegen that the ranks' collectives run
    within a group. The embedding is computed on every rank (a lookup reads the
    rows it needs), `tfm.pipeline_receive` replaces it with the previous
    stage's rows on stages after the first, `tfm.pipeline_send` hands the
    stage's rows to the next, and `tfm.pipeline_collect` marks the logits
    rank 0 returns.

    A model is split where its stages are alike: `stages` divides the
    layers, each stage's layers are the first stage's over other weights
    (a period of sliding and full layers must fit in a stage), and one
    hidden value passes from a stage to the next. Others are refused,
    naming the first difference.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "2", "Pipeline stages">,
    Option<"ranks", "ranks", "int64_t", "1",
           "Tensor-parallel ranks a stage (MPI ranks: stages x ranks)">,
    Option<"stageLayers", "layers", "std::string", "\"\"",
           "Each stage's layers, first to last, comma-separated (empty: "
           "the stages balanced by their weights)">,
  ];
}

def PipelineLastStagePass : Pass<"tfm-pipeline-last-stage", "ModuleOp"> {
  let summary = "Run a pipeline's final norm and LM head on its last stage only";
  let description = [{
    After the fusions, on a model split by tfm-pipeline-stages: what only
    the logits that `tfm.pipeline_collect` marks read (the final norm, the
    head, @prefill's choice of last rows) moves under `scf.if` on
    `tfm.pipeline_last_stage`, true on rank 0; the other stages yield an
    empty tensor, which their callers drop. So no stage but the last reads
    the head's weights.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LocalizeShardedWeightsPass : Pass<"tfm-localize-sharded-weights", "ModuleOp"> {
  let summary = "Declare each split weight as the part one rank holds";
  let description = [{
    After `shard-partition`, each rank reads its part of a split weight:
    `tfm.weight_decl`s with `tfm.split_over_ranks` get that part's type, so
    the weight layout and the weight blob (one per rank) are laid out for
    the part.
  }];
}

def TakeRankPartsPass : Pass<"tfm-take-rank-parts", "ModuleOp"> {
  let summary = "Each rank's part of a value computed whole, as a slice";
  let description = [{
    After `shard-partition`, a `shard.all_slice` (a value every rank
    computes whole, read split: OLMoE's queries and keys, normed across all
    heads) becomes a `tensor.extract_slice` at the rank's offset, the rank
    read by `shard.process_linear_index`.
  }];
  let dependentDialects = ["arith::ArithDialect", "tensor::TensorDialect"];
}

def ExpandLatentAttentionPass : Pass<"tfm-expand-latent-attention", "ModuleOp"> {
  let summary = "Multi-head latent attention in its expanded form where that costs less";
  let description = [{
    The frontend builds multi-head latent attention (DeepSeek-V3, Kimi-K2,
    Moonlight) absorbed: each head's query is taken into the latent space
    (`tfm.head_linear` by the key up-projection, transposed), attention is
    multi-query over the latent rows the cache keeps (width latent + rope,
    the value their first `latent` columns), and each head's result is taken
    back to its value width (`tfm.head_linear` by the value up-projection).
    A decode step pays little for that; a long prompt pays for every query
    and key pair at the latent width.

    This pass gives each such attention (marked `tfm.expanded_key`, the
    declaration of the key up-projection as stored) the expanded form too:
    every latent row the attention reads is up-projected to each head's key
    (`tfm.linear`, then its rotated part beside it, the same for every head)
    and value (`tfm.linear` by the value up-projection), and attention is
    ordinary multi-head attention at width nope + rope and value width.
    An `scf.if` picks one at run time by the multiply-adds each costs per
    head: the absorbed form `s · latent · (nope + value)` for its two
    projections and `(2 · latent + rope)` per query-key pair, the expanded
    form `t · latent · (nope + value)` for the expansion and `(nope + rope +
    value)` per pair, counted twice (its heads do not share their keys and
    values, and the attention kernel runs at about half the rate on them),
    for `s` queries over `t` keys (`s · t − s · (s − 1) / 2` pairs under the
    causal mask). A whole prompt takes the expanded form; a chunk of a few
    hundred queries after thousands of cached keys, the absorbed one. An
    attention whose query count is static and small enough that the
    expanded form cannot win (a decode step's one query), or whose widths
    never let it win (a latent narrower than about twice a head's key and
    value), is left as it is.

    Run after tfm-kv-cache (the expansion reads the cached rows) and before
    the fusions. A split model's attention (`--ranks`) keeps the absorbed
    form: its heads are the rank's, the stored key up-projection is not.
  }];
  let dependentDialects = ["arith::ArithDialect", "linalg::LinalgDialect",
                           "scf::SCFDialect", "tensor::TensorDialect"];
}

#endif // TFM_PASSES_PASSES_TD
