//===- LinalgBuilders.h - small builders of linalg ops ----------*- C++ -*-===//
//
// Helpers the tfm -> linalg lowerings share: empty and filled tensors of a
// value's dynamic shape, elementwise generics, and row reductions.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_LINALGBUILDERS_H
#define TFM_CODEGEN_LINALG_LINALGBUILDERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {

/// Body of a linalg.generic: receives the block arguments (inputs, then
/// outputs) and returns the value to yield.
using GenericBody =
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// `tensor.empty` of `type`, taking its dynamic sizes from `sizes` (one
/// OpFoldResult per dimension).
Value createEmpty(OpBuilder &b, Location loc, RankedTensorType type,
                  ArrayRef<OpFoldResult> sizes);

/// `tensor.empty` + `linalg.fill` with `value`.
Value createFilled(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<OpFoldResult> sizes, double value);

/// A linalg.generic over the result's iteration space with the given maps and
/// iterator types and one output `init`.
Value createGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                    ArrayRef<AffineMap> maps,
                    ArrayRef<utils::IteratorType> iterators, GenericBody body);

/// An all-parallel linalg.generic whose inputs share the result's shape
/// (identity maps); `like` gives the result's type and dynamic sizes.
Value createElementwise(OpBuilder &b, Location loc, Value like,
                        ValueRange inputs, GenericBody body);
/// The same with a result of `type` (another element type than `like`'s),
/// its dynamic sizes `like`'s.
Value createElementwise(OpBuilder &b, Location loc, RankedTensorType type,
                        Value like, ValueRange inputs, GenericBody body);

/// Reduces the last dimension of `input` (rank 2 or 3) into a tensor of the
/// leading dimensions, starting from `initValue` and combining with `body`
/// (block arguments: element, accumulator).
Value createRowReduction(OpBuilder &b, Location loc, Value input,
                         double initValue, GenericBody body);

/// softmax(x) along the last dimension of `logits` (any rank; `sizes` its
/// dimensions): the row maximum subtracted, exponentiated, normalized by
/// the row sum: attention's probabilities. `sinks` (`[dim 0]`, optional)
/// are logits without a value that join every row of their leading index:
/// its maximum and its sum, not its probabilities.
Value softmaxOverLastDim(OpBuilder &b, Location loc, Value logits,
                         ArrayRef<OpFoldResult> sizes, Value sinks = Value());

/// Sum (or max) over the rows of `x` ([n, d] -> [d]): a column's
/// statistic (mean pooling, a channel's norm).
Value createColumnReduction(OpBuilder &b, Location loc, Value x, bool max);

/// What runs for one sequence of a packed batch: its index, first row and
/// row count (all `index`), and the loop-carried values; returns their
/// next values.
using SequenceBody = llvm::function_ref<SmallVector<Value>(
    OpBuilder &, Location, Value sequence, Value start, Value length,
    ValueRange carried)>;

/// An scf.for over the sequences of `lengths` (`tensor<?xi32>`, packed end
/// to end), carrying `inits` through `body`; returns their final values.
/// For the ops that see sequence boundaries (tfm-pack-sequences): each
/// sequence's rows are sliced out and lowered as a sequence of their own.
SmallVector<Value> forEachSequence(OpBuilder &b, Location loc, Value lengths,
                                   ValueRange inits, SequenceBody body);

/// Rows [start, start + length) of `value` (rank >= 1, all other
/// dimensions whole), and its inverse: `rows` inserted into `into` there.
Value sliceRows(OpBuilder &b, Location loc, Value value, Value start,
                Value length);
Value insertRows(OpBuilder &b, Location loc, Value rows, Value into,
                 Value start);

/// The lowering of an op that takes sequence lengths: packed sequences
/// become a loop (forEachSequence) over unpacked ops of the same kind,
/// which the same pattern then lowers, so the conversion is told that this
/// recursion ends.
template <typename OpTy>
struct PackedSequencesPattern : OpConversionPattern<OpTy> {
  PackedSequencesPattern(MLIRContext *ctx) : OpConversionPattern<OpTy>(ctx) {
    this->setHasBoundedRewriteRecursion();
  }
};

/// `tensor.empty` + `linalg.fill` with zeros of a static shape.
Value staticZeros(OpBuilder &b, Location loc, RankedTensorType type);

/// The state a recurrent op (tfm.causal_conv1d, tfm.gated_delta_rule)
/// starts from, of static `type`: `state`, or zeros where there is none or
/// where the i1 `reset` says the sequence starts here.
Value recurrentStartingState(OpBuilder &b, Location loc, Value state,
                             Value reset, RankedTensorType type);

/// Creates an f32 constant.
Value f32Constant(OpBuilder &b, Location loc, double value);

/// Soft-capping of one f32 value: `cap · tanh(x / cap)` (Gemma 2's
/// attention scores and final logits).
Value softcapped(OpBuilder &b, Location loc, Value x, double cap);

/// `result[i, :] = input[rows[i], :]` for an integer row list `rows` ([n]),
/// as `type` ([n, columns]): tfm.gather_rows' constant table, tfm.take_rows'
/// run-time one.
Value gatherRows(OpBuilder &b, Location loc, Value input, Value rows,
                 RankedTensorType type);

/// `acc + value` as a reduction step: reassociable (and contractible into
/// an FMA), so that LLVM vectorizes the loop; summation order is not part of
/// any op's contract.
Value accumulate(OpBuilder &b, Location loc, Value acc, Value value);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_LINALGBUILDERS_H
