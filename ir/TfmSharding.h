//===- TfmSharding.h - tfm ops' ShardingInterface -----------------*- C++
//-*-===//
//
// How upstream shard-partition partitions tfm ops (TfmSharding.cpp), and the
// records tensor parallelism leaves on weight declarations.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMSHARDING_H
#define TFM_IR_TFMSHARDING_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

namespace mlir::tfm {

/// On a tfm.weight_decl of a model compiled for N ranks: `array<i64: axis,
/// N>`: each rank holds the checkpoint tensor's part `rank` of N equal
/// parts along `axis`, and the declared type is that part (after
/// tfm-localize-sharded-weights; the whole tensor before it).
inline constexpr llvm::StringLiteral kSplitOverRanksAttrName =
    "tfm.split_over_ranks";
/// On a tfm.weight_decl: the ranks (an integer) among which rank 0 holds the
/// tensor and the others zeros, so that their sum is the tensor: the bias
/// of a projection whose partial products are summed (shard.all_reduce).
inline constexpr llvm::StringLiteral kPartialOverRanksAttrName =
    "tfm.partial_over_ranks";

/// On the module of a model split over ranks, from
/// tfm-localize-sharded-weights on (codegen lowers the declarations away):
/// weight name -> `array<i64: axis, ranks>`, axis -1 for a summed bias.
/// What the packager writes each rank's weights from.
inline constexpr llvm::StringLiteral kRankWeightsAttrName = "tfm.rank_weights";
/// On the module of a model whose ranks run the same code over different
/// weights (expert parallelism, tfm-expand-experts; pipeline stages,
/// tfm-pipeline-stages): the weight of a place -> the checkpoint tensors
/// ranks 0, 1, ... hold there (strings).
inline constexpr llvm::StringLiteral kRankWeightSourcesAttrName =
    "tfm.rank_weight_sources";
/// On the module of a model split into pipeline stages (tfm-pipeline-
/// stages): their number, P. Its MPI ranks are P groups of its tensor-
/// parallel ranks, so the collectives those leave run within a group.
inline constexpr llvm::StringLiteral kPipelineStagesAttrName =
    "tfm.pipeline_stages";

/// Attaches ShardingInterface to the tfm ops that tensor parallelism splits.
void attachShardingModels(MLIRContext &context);

/// Where rank `rank`'s part, of type `part`, sits in a tensor split in equal
/// parts along `axis` (static in `part`): at rank·size along `axis` and 0
/// elsewhere, unstrided, with the part's sizes (its dynamic ones read from
/// `like`, a tensor whose other axes are the part's). A split value's
/// slice (tfm-take-rank-parts) and the gathered logits' slot
/// (tfm-lower-collectives-to-mpi) are both this.
struct RankPartBounds {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
RankPartBounds rankPartBounds(OpBuilder &builder, Location loc,
                              RankedTensorType part, Value like, int64_t axis,
                              Value rank);

} // namespace mlir::tfm

#endif // TFM_IR_TFMSHARDING_H
