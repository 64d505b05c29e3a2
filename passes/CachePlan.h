//===- CachePlan.h - what tfm-kv-cache found in @forward --------*- C++ -*-===//
//
// The analysis of tfm-kv-cache (KVCache.cpp) and what the functions it
// derives share: @prefill/@decode and @encode there, @decode_batch in
// DecodeBatch.cpp, @prefill_batch in PrefillBatch.cpp, a vision-language
// model's @prefill_embeddings in PrefillEmbeddings.cpp, and the slices of
// a batched cache both batched ones take (BatchedCache.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CACHEPLAN_H
#define TFM_PASSES_CACHEPLAN_H

#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace mlir::tfm {

/// A recurrent op of @forward (tfm.causal_conv1d, tfm.gated_delta_rule):
/// its state ([K - 1, C] or [Hv, dk, dv]) lives at elements [offset,
/// offset + stateType's elements) of the recurrent state cache.
struct RecurrentSlot {
  Operation *op = nullptr;
  int64_t offset = 0;
  RankedTensorType stateType;
};

/// What the analysis found: the layers' self-attention ops in order and
/// the shape of one layer's cached keys ([?, kv_heads, head_dim]); for an
/// encoder-decoder also its cross-attention ops (keys and values computed
/// from the source alone) and their key shape, and which arguments of
/// @forward are the source and the decoder's tokens.
struct CachePlan {
  SmallVector<AttentionOp> layers;
  RankedTensorType keyType;
  /// The windowed layers' keys where they are not of `keyType`, the other
  /// layers' (Gemma 4's sliding layers, whose heads are narrower and more
  /// than its full layers'): every windowed layer then keeps a ring in the
  /// cache of rings (CacheLayout::ringPlanes; CacheKind
  /// self_attention_rings). Null: every layer's keys are of `keyType`.
  RankedTensorType ringKeyType;
  /// Per layer, the earlier layer whose keys and values it attends over
  /// (the same SSA values: Gemma 4's layers that share an earlier layer's
  /// KV), or -1: its own. A sharing layer caches nothing of its own.
  SmallVector<int64_t> sources;
  SmallVector<AttentionOp> crossLayers;
  RankedTensorType crossKeyType;
  unsigned tokensArg = 0;
  std::optional<unsigned> sourceArg;
  /// The recurrent ops in program order, their states packed end to end
  /// in one f32 cache of `recurrentElements` (CacheKind recurrent_state).
  SmallVector<RecurrentSlot> recurrent;
  int64_t recurrentElements = 0;
  /// Every layer is a latent attention (latentValueWidth): the cache keeps
  /// its rows alone, one plane a layer ([layers, 1, capacity, 1, width]),
  /// and the attention reads its values as their leading columns in place.
  bool latent = false;
  /// What the self-attention cache stores its rows as (tfm.quantize_rows,
  /// kv-dtype): i8 (codes and a scale), bf16 or f16; null: the keys' own
  /// f32. The cross-attention cache stays f32.
  Type storedRows;
};

/// The analysis of tfm-kv-cache (KVCache.cpp): proves that caching
/// `forward` is sound (only attention mixes positions, it is causal, and
/// positions count the tokens) and finds its layers and their keys, or
/// says on the op why not. `storedRows` is left null (f32).
FailureOr<CachePlan> planCache(func::FuncOp forward);

/// The cache of `layers` layers of keys of `keyType` ([?, kv_heads,
/// head_dim]): [layers, 2, capacity, kv_heads, head_dim], or with
/// `keysOnly` (a latent cache) [layers, 1, capacity, kv_heads, head_dim].
RankedTensorType cacheTypeOf(RankedTensorType keyType, size_t layers,
                             int64_t capacity, bool keysOnly = false);

/// Source positions the cross cache holds: as many as the encoder's
/// output has where that is fixed (Whisper's 1500 frames of 30 s), else
/// `capacity` (text sources, as long as the decoder's context).
int64_t crossCapacity(const CachePlan &plan, int64_t capacity);

/// The self-attention cache of `plan`: cacheTypeOf its keys, for int8 rows
/// [layers, 2, capacity, kv_heads, head_dim + 4] i8 (each row's codes and
/// scale), for bf16/f16 rows the same shape in that type. `planes`: as many
/// layer planes (CacheLayout's), where that is not one per layer.
RankedTensorType selfCacheTypeOf(const CachePlan &plan, int64_t capacity,
                                 std::optional<int64_t> planes = {});
/// The cache of the rings of windowed layers, `planes` of `rows` rows: as
/// selfCacheTypeOf, of the plan's ringKeyType where it has one.
RankedTensorType ringCacheTypeOf(const CachePlan &plan, int64_t rows,
                                 int64_t planes);

/// Where @prefill's caches keep one layer's keys and values: in plane
/// `plane` of [planes, 2, capacity, ...], every position at its slot
/// (`ring` 0) or, for a windowed layer, only the last `ring` positions in
/// rows [offset, offset + ring) of a plane of the rings' cache, position p
/// at row offset + p mod ring (`offset` is 0: one ring a plane).
struct LayerRows {
  int64_t plane = 0, offset = 0, ring = 0;
  /// A layer that shares an earlier layer's rows (CachePlan::sources) has
  /// that layer's place, and of the layers reading one place, one appends
  /// the new rows and the others only read: a plane's first reader (its
  /// rows stay), a ring's last (the rows it drops the others still see).
  /// @prefill reuses what the first reader read instead.
  int64_t source = -1;
  bool appends = true;
};
struct CacheLayout {
  int64_t planes = 0;
  SmallVector<LayerRows> layers; // as plan.layers
  /// The windowed layers' rings, one a plane of a second cache of
  /// `ringRows` rows (their largest ring); 0 planes: none.
  int64_t ringPlanes = 0, ringRows = 0;
};
/// One plane per layer, unless layers' windows differ (GPT-Neo's local
/// layers beside global ones): then each windowed layer keeps a ring of its
/// window in a plane of a cache of rings beside the first, so that the
/// caches hold only what some query can still see, and the first cache's
/// rows are the positions' (which sessions copy and cut back by position).
/// Where every layer has one window, the runtime slides the whole cache
/// instead (sharedWindow); where every layer is windowed but windows
/// differ, each keeps every position in a plane. Where the windowed layers'
/// keys are of another type (ringKeyType), all of them keep rings.
CacheLayout layOutCache(const CachePlan &plan, int64_t capacity);
/// Gives each layer that shares an earlier layer's rows (LayerRows::source
/// set) that layer's place, and says which of their readers appends.
void shareSourcesRows(SmallVectorImpl<LayerRows> &layers);

/// Where the batched entry points (@prefill_batch, @decode_batch) keep each
/// layer. Without rings in @prefill's layout, every layer has a plane of
/// the batched cache, which the engine pages. With them (layers' windows
/// differ), the layers without a window have the planes of that cache, and
/// each windowed layer a plane of a second cache of rings, [rings, 2,
/// window, ...] a sequence (the largest window; CacheKind
/// self_attention_rings): rewritten in place, so neither paged nor shared
/// between sequences, and a sequence's cache holds only what some query
/// can still see, as @prefill's does.
struct BatchedLayout {
  RankedTensorType pagedType;    // one sequence's [planes, 2, capacity, ...]
  RankedTensorType ringType;     // one sequence's rings; null: none
  SmallVector<LayerRows> layers; // as plan.layers; ring > 0: in ringType's
};
BatchedLayout layOutBatchedCache(const CachePlan &plan, int64_t capacity);

/// Multi-head latent attention (DeepSeek's MLA, absorbed): every head reads
/// one latent row per position ([?, 1, width]) as its key and the row's
/// leading columns as its value (a tensor.extract_slice of the key). Its
/// cache holds the row alone, in a cache of one plane a layer
/// (CachePlan::latent), and the attention reads its value from the same
/// cached rows. The value's width where `attention` is such a layer.
std::optional<int64_t> latentValueWidth(AttentionOp attention);

/// Columns [offset, offset + width) of every latent row of `rows` ([?, 1,
/// w]), as [?, 1, width], or as [?, width] with `dropHead`.
Value latentColumns(OpBuilder &b, Location loc, Value rows, int64_t offset,
                    int64_t width, bool dropHead = false);

/// The keys and values a self-attention layer's cache holds: its own, or
/// a latent layer's rows alone (`values` null).
struct RowsToCache {
  Value keys, values;
};
RowsToCache rowsToCache(AttentionOp attention);
/// Points `attention` at what its cache holds (`keys` and `values` as
/// rowsToCache gives them, for every position it sees): a latent layer's
/// rows, and its value their leading columns (`values` null).
void attendToCached(OpBuilder &b, Location loc, AttentionOp attention,
                    Value keys, Value values);

/// What appendAndRead returns: the updated cache, and the layer's cached
/// keys and values as f32 (a latent cache's keys alone, `values` null).
struct CachedKeysAndValues {
  Value cache, keys, values;
};
/// Appends `keys` and `values` ([s, kv_heads, head_dim] f32; `values`
/// null for a latent cache) to layer
/// `layer` of `cache` (of `cacheType`) from position `position`, then
/// reads its positions [0, end) back; a narrow cache (int8, bf16, f16)
/// stores them on the way in and widens them on the way out
/// (tfm.quantize_rows, tfm.dequantize_rows).
CachedKeysAndValues appendAndRead(OpBuilder &b, Location loc,
                                  RankedTensorType cacheType, Value cache,
                                  Value keys, Value values, Value position,
                                  Value end,
                                  int64_t layer);

/// What `appendAndRead` or `appendAndReadRing` return for `layer`, of a
/// cache another reader of the same place appends to (LayerRows::appends
/// false): for a plane, after that append; for a ring, before it.
CachedKeysAndValues readAppended(OpBuilder &b, Location loc,
                                 RankedTensorType cacheType, Value cache,
                                 Value keys, Value values, Value start,
                                 Value end, const LayerRows &layer);

/// A windowed layer's `appendAndRead` (`layer.ring` > 0): appends the rows
/// of positions [start, start + s) to its ring and returns the keys and
/// values of positions [max(start - ring + 1, 0), start + s), so that
/// causal attention with the layer's window sees what it would see over
/// every position.
CachedKeysAndValues appendAndReadRing(OpBuilder &b, Location loc,
                                      RankedTensorType cacheType, Value cache,
                                      Value keys, Value values, Value start,
                                      const LayerRows &layer);

/// In a clone of @forward (`mapping` from the original), points every
/// cross-attention at the keys and values @encode cached: appends the
/// cross cache and the encoded length to the clone's arguments. The
/// encoder is then dead in the clone.
void readCrossCache(func::FuncOp clone, const IRMapping &mapping,
                    const CachePlan &plan, int64_t capacity);

/// Removes what no longer feeds the results, then the argument `unused`
/// if given (which must then be unused); the function's type follows.
void pruneDeadCode(func::FuncOp func, std::optional<unsigned> unused);

/// Whether `op` carries a state from position to position
/// (tfm.causal_conv1d, tfm.gated_delta_rule); `planCache` admits it.
bool isRecurrent(Operation *op);

/// The recurrent state cache of `plan`: f32 [recurrentElements].
RankedTensorType recurrentStateTypeOf(const CachePlan &plan);

/// Points `op` (the clone of `slot.op`) at its state in `state` (one
/// sequence's [elements]), read as zeros where `reset` (an i1) is true, and
/// returns `state` with the op's final state written back, built after
/// `op`. The cache is then updated in place, as a KV cache's rows are.
Value carryRecurrentState(OpBuilder &b, Operation *op,
                          const RecurrentSlot &slot, Value state, Value reset);

/// Inside a batched entry point: replaces recurrent `op` (the clone of
/// `slot.op`, over every chunk's rows) by a loop over the chunks, each
/// running the op on its own rows from its own sequence's state in
/// `states` ([sequences, elements]), reset where the chunk starts at
/// position 0; returns the updated states. `lengths`: the chunks' token
/// counts; null where every row is a chunk of its own (@decode_batch).
Value recurInEachChunk(Operation *op, const RecurrentSlot &slot, Value states,
                       Value positions, Value sequences, Value lengths);

/// The window every self-attention layer shares (0: none, or not one).
int64_t sharedWindow(const CachePlan &plan);
/// The rows of every ring of `layers` where they are alike (0: no rings,
/// or rings of different lengths).
int64_t uniformRing(ArrayRef<LayerRows> layers);

/// `value` ([rows, features]) narrowed to `rows` of its rows by `pick`
/// (which slices a [rows, features] value). The slice is taken above the
/// position-wise ops that produce `value` (a final norm, the LM head, a
/// split head's gather of its columns),
/// so that they run on the picked rows only. `varying`: the values that
/// vary with the positions (the others are weights, taken whole).
Value pickRows(OpBuilder &b, Location loc, Value value, int64_t rows,
               llvm::function_ref<Value(OpBuilder &, Location, Value)> pick,
               const llvm::DenseSet<Value> &varying);

/// The batched cache of `cacheType`'s sequences: [?, layers, 2, capacity,
/// kv_heads, head_dim], as many sequences as the caller allocates.
RankedTensorType batchedCacheTypeOf(RankedTensorType cacheType);

/// Rows [offset, offset + count) of `value` (its first dimension).
Value sliceRows(OpBuilder &b, Location loc, Value value, OpFoldResult offset,
                OpFoldResult count);
/// `rows` inserted into `into` from row `offset` on.
Value insertRows(OpBuilder &b, Location loc, Value rows, Value into,
                 OpFoldResult offset);

/// Offsets, sizes and strides of sequence `sequence` ([layers, 2,
/// capacity, kv_heads, head_dim]) in the batched cache.
struct SequenceOfCache {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
SequenceOfCache sequenceOfCache(OpBuilder &b, RankedTensorType cacheType,
                                Value sequence);

/// Points the position ids `func` counts from `tokens` at `positions`
/// (one per token, given by the caller).
void replaceCountedPositions(func::FuncOp func, Value tokens,
                             Value positions);

/// A clone of `forward` named `name`, placed at the end of its module
/// (`mapping`: from the original's values to the clone's).
func::FuncOp cloneForBatch(func::FuncOp forward, StringRef name,
                           IRMapping &mapping);

/// What attendInSequence returns: the step's attended rows with the new
/// ones inserted, and the updated batched cache.
struct AttendedInSequence {
  Value out, cache;
};
/// Inside a batched entry point's loop: rows [first, first + count) of
/// self-attention `attention`'s queries, keys and values, which are the
/// consecutive positions from `start` of sequence `sequence` of the
/// batched `cache` (one sequence's type `cacheType`), append their keys and
/// values there, at the layer's `rows`, and attend over that sequence's
/// positions [0, start + count) (a ring: those its window still sees);
/// their outputs go into `out` at the same rows.
AttendedInSequence attendInSequence(OpBuilder &b, Location loc,
                                    AttentionOp attention,
                                    const LayerRows &rows,
                                    RankedTensorType cacheType, Value out,
                                    Value cache, Value sequence, Value first,
                                    Value count, Value start);

/// A batched entry point's caches: the paged one and, where the layout has
/// rings, the rings (BatchedLayout), as arguments of the entry block and,
/// as the layers go, their updated values.
struct BatchedCaches {
  BatchedLayout layout;
  Value paged, rings;
  /// The recurrent states, [sequences, elements] (after the rings); null:
  /// the model has no recurrent layers.
  Value recurrent;
  /// Adds the caches' arguments to `entry` (the rings after the paged
  /// cache); returns the paged one's index.
  unsigned addArguments(Block &entry, Location loc, const CachePlan &plan);
  /// Their tfm.cache attributes, once `func` has its final type (the paged
  /// cache at argument `index`).
  void describe(func::FuncOp func, const CachePlan &plan, unsigned index);
  /// Replaces every recurrent op of `plan` (mapped to `func`'s clones by
  /// `mapping`) by recurInEachChunk.
  void recur(const CachePlan &plan, const IRMapping &mapping, Value positions,
             Value sequences, Value lengths);
  /// Replaces self-attention `attention` (layer `layer`) through
  /// `attendEach`, which loops over the batch and returns the updated
  /// cache it was given, and updates that cache.
  void
  attend(int64_t layer,
         llvm::function_ref<Value(const LayerRows &, RankedTensorType, Value)>
             attendEach);
  /// The caches as results after `results`, and the function's type.
  void returnWith(func::FuncOp func, SmallVector<Value> results);
};

/// Element `row` of a [n] integer tensor as an index.
Value indexAt(OpBuilder &b, Location loc, Value values, Value row);

/// How many chunks (a [chunks] tensor of `lengths`) a loop over a call's
/// `tokens` rows runs: all of them, or none where the rows are none (a
/// layer a shorter pipeline stage does not run has its rows sliced to
/// none, tfm-pipeline-stages, though the call has chunks).
Value chunksOfRows(OpBuilder &b, Location loc, Value lengths, Value tokens);

/// @decode_batch(tokens [B], positions [B], sequences [B], cache [S,
/// layers, 2, capacity, kv_heads, head_dim], ...) -> (logits [B, vocab],
/// cache): one token of each of B sequences, each at its own position in
/// its own sequence of the cache (DecodeBatch.cpp). Where the layout has
/// rings (BatchedLayout), the cache's planes are the layers without a
/// window and the rings follow it, as an argument and as a result.
void buildDecodeBatch(func::FuncOp forward, const CachePlan &plan,
                      int64_t capacity);

/// @prefill_batch(tokens [N], positions [N], sequences [B], lengths [B],
/// cache [S, layers, 2, capacity, kv_heads, head_dim]) -> (logits [B,
/// vocab], cache): B chunks of consecutive tokens packed end to end, chunk
/// b the next lengths[b] tokens of sequence sequences[b] of the cache, and
/// the logits of each chunk's last token (PrefillBatch.cpp). Decoders
/// only: an encoder-decoder's sequences would share one source. Rings as
/// @decode_batch's. With `everyRow`, @verify_batch: the same, with every
/// token's logits ([N, vocab]).
void buildPrefillBatch(func::FuncOp forward, const CachePlan &plan,
                       int64_t capacity, bool everyRow = false);

/// @<prefill>_embeddings(rows [n, hidden], ...): a clone of `prefill`
/// (@prefill, or the engine's @prefill_batch) whose embedding lookup is
/// `rows` (an image's tokens at the prompt's placeholders;
/// PrefillEmbeddings.cpp). Fails, naming the op, where it reads its token
/// ids other than to look them up or count them.
LogicalResult buildPrefillEmbeddings(func::FuncOp prefill,
                                     const CachePlan &plan);

/// Whisper's @align(tokens, cross cache, encoded length) -> [tokens,
/// alignment heads, source positions]: the listed cross-attention heads'
/// probabilities ([layer, head] pairs end to end) over the teacher-forced
/// tokens (AlignmentEntry.cpp). Fails, naming the pair, where a layer or
/// head is not the decoder's.
LogicalResult buildAlign(func::FuncOp forward, const CachePlan &plan,
                         int64_t capacity, ArrayRef<int32_t> alignmentHeads);

} // namespace mlir::tfm

#endif // TFM_PASSES_CACHEPLAN_H
