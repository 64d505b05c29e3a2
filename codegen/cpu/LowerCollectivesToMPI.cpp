//===- LowerCollectivesToMPI.cpp - all-reduces as MPI_Allreduce ----------===//
//
// The tfm-lower-collectives-to-mpi pass (see Passes.td): the all-reduces
// tensor parallelism leaves in a per-rank program, on tensors, become an
// in-place mpi.allreduce of a buffer on MPI_COMM_WORLD (on the runtime's
// communicator of a stage's ranks, for a model also split into pipeline
// stages), before bufferization.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "codegen/cpu/PipelineTransfers.h"
#include "ir/TfmSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERCOLLECTIVESTOMPIPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct LowerCollectivesToMPIPass
    : tfm::impl::LowerCollectivesToMPIPassBase<LowerCollectivesToMPIPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
    if (grids.empty())
      return;
    if (implementation != "OpenMPI" && implementation != "MPICH") {
      module.emitError("tfm-lower-collectives-to-mpi: unknown MPI "
                       "implementation '")
          << implementation << "' (OpenMPI or MPICH)";
      return signalPassFailure();
    }
    // The ranks are MPI_COMM_WORLD, or a pipeline stage's group of them:
    // one grid of one axis, all-reduced whole.
    if (grids.size() != 1 || grids[0].getRank() != 1) {
      grids[0].emitError("tfm-lower-collectives-to-mpi: a model is split "
                         "over one grid of one axis, its MPI ranks");
      return signalPassFailure();
    }
    inStages = module->hasAttr(kPipelineStagesAttrName);
    WalkResult walked = module.walk([&](Operation *op) {
      if (op->getDialect() &&
          op->getDialect()->getNamespace() ==
              shard::ShardDialect::getDialectNamespace() &&
          !isa<shard::GridOp, shard::AllReduceOp, shard::AllGatherOp,
               shard::ProcessLinearIndexOp>(op)) {
        op->emitOpError("is not lowered to MPI by tfmc");
        return WalkResult::interrupt();
      }
      if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
        if (failed(lower(allReduce)))
          return WalkResult::interrupt();
      if (auto allGather = dyn_cast<shard::AllGatherOp>(op))
        if (failed(lower(allGather)))
          return WalkResult::interrupt();
      if (auto rank = dyn_cast<shard::ProcessLinearIndexOp>(op))
        lower(rank);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return signalPassFailure();
    grids[0].erase();
    MLIRContext *context = &getContext();
    DataLayoutEntryInterface entry =
        DataLayoutEntryAttr::get(StringAttr::get(context, "MPI:Implementation"),
                                 StringAttr::get(context, implementation));
    module->setAttr(DLTIDialect::kMapAttrName, MapAttr::get(context, entry));
  }

  /// The grid's ranks are a pipeline stage's (tfm.pipeline_stages): a group
  /// of MPI_COMM_WORLD that the runtime splits at load.
  bool inStages = false;

  /// The communicator of the grid's ranks: MPI_COMM_WORLD, or the runtime's
  /// of this rank's stage (tfm_rt_stage_comm, a handle as the MPI lowering
  /// carries one: an i64).
  Value gridComm(OpBuilder &builder, Location loc) {
    auto commType = mpi::CommType::get(builder.getContext());
    if (!inStages)
      return mpi::CommWorldOp::create(builder, loc, commType);
    Value comm = callScalarFunction(builder, loc, "tfm_rt_stage_comm", {},
                                    builder.getI64Type());
    return UnrealizedConversionCastOp::create(builder, loc, commType, comm)
        .getResult(0);
  }

  /// A buffer of `type`'s shape, the dynamic sizes those of `like`.
  static Value allocLike(OpBuilder &builder, Location loc,
                         RankedTensorType type, Value like) {
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamicSizes.push_back(tensor::DimOp::create(builder, loc, like, d));
    return memref::AllocOp::create(
        builder, loc, MemRefType::get(type.getShape(), type.getElementType()),
        dynamicSizes);
  }

  /// Sums `buffer` over the ranks in place, seen as one vector of floats;
  /// returns it as a tensor of `type`.
  static Value sumInPlace(OpBuilder &builder, Location loc, Value buffer,
                          RankedTensorType type, Value comm) {
    Value flat = buffer;
    if (type.getRank() > 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      flat = memref::CollapseShapeOp::create(
          builder, loc, buffer, ArrayRef<ReassociationIndices>{all});
    }
    mpi::AllReduceOp::create(builder, loc, /*retval=*/Type(), flat, flat,
                             mpi::MPI_ReductionOpEnum::MPI_SUM, comm);
    return bufferization::ToTensorOp::create(builder, loc, type, buffer,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  }

  /// The vocabulary-parallel LM head's logits: each rank writes its part
  /// into a zeroed buffer of the whole, and the sum over the ranks is the
  /// whole (the mpi dialect has no all-gather; the zeros add exactly).
  LogicalResult lower(shard::AllGatherOp allGather) {
    auto part = dyn_cast<RankedTensorType>(allGather.getInput().getType());
    auto whole = dyn_cast<RankedTensorType>(allGather.getType());
    int64_t axis = allGather.getGatherAxis().getSExtValue();
    if (!part || !whole || !part.getElementType().isF32() ||
        allGather.getGridAxes().size() != 1 || part.isDynamicDim(axis))
      return allGather.emitOpError("tfmc lowers to MPI the gathering of an "
                                   "f32 tensor over all ranks only");
    OpBuilder builder(allGather);
    Location loc = allGather.getLoc();
    Value input = allGather.getInput();
    Value buffer = allocLike(builder, loc, whole, input);
    Value zero =
        arith::ConstantOp::create(builder, loc, builder.getF32FloatAttr(0.0f));
    linalg::FillOp::create(builder, loc, ValueRange{zero}, ValueRange{buffer});
    Value comm = gridComm(builder, loc);
    RankPartBounds bounds = rankPartBounds(builder, loc, part, input, axis,
                                           rankIndex(builder, loc, comm));
    Value slot = memref::SubViewOp::create(builder, loc, buffer, bounds.offsets,
                                           bounds.sizes, bounds.strides);
    auto copy = bufferization::MaterializeInDestinationOp::create(builder, loc,
                                                                  input, slot);
    copy.setWritable(true);
    copy.setRestrict(true);
    allGather.replaceAllUsesWith(sumInPlace(builder, loc, buffer, whole, comm));
    allGather.erase();
    return success();
  }

  /// This process's rank in `comm`, as an index.
  static Value rankIndex(OpBuilder &builder, Location loc, Value comm) {
    auto rank = mpi::CommRankOp::create(builder, loc, /*retval=*/Type(),
                                        builder.getI32Type(), comm);
    return arith::IndexCastOp::create(builder, loc, builder.getIndexType(),
                                      rank.getRank());
  }

  /// The rank's index on the one grid: its rank in the grid's communicator.
  void lower(shard::ProcessLinearIndexOp index) {
    OpBuilder builder(index);
    Location loc = index.getLoc();
    Value comm = gridComm(builder, loc);
    index.getResult().replaceAllUsesWith(rankIndex(builder, loc, comm));
    index.erase();
  }

  LogicalResult lower(shard::AllReduceOp allReduce) {
    auto tensor = dyn_cast<RankedTensorType>(allReduce.getInput().getType());
    if (!tensor || allReduce.getReduction() != shard::ReductionKind::Sum ||
        allReduce.getGridAxes().size() != 1 ||
        allReduce.getType() != allReduce.getInput().getType() ||
        !tensor.getElementType().isF32())
      return allReduce.emitOpError("tfmc lowers to MPI the sum of an f32 "
                                   "tensor over all ranks only");
    OpBuilder builder(allReduce);
    Location loc = allReduce.getLoc();
    Value input = allReduce.getInput();
    Value buffer = allocLike(builder, loc, tensor, input);
    auto copy = bufferization::MaterializeInDestinationOp::create(
        builder, loc, input, buffer);
    copy.setWritable(true);
    copy.setRestrict(true);
    Value comm = gridComm(builder, loc);
    Value sum = sumInPlace(builder, loc, buffer, tensor, comm);
    allReduce.replaceAllUsesWith(sum);
    allReduce.erase();
    return success();
  }
};

} // namespace

namespace {

/// What mpi.allreduce does to memory, which upstream's op does not declare
/// (LLVM 22): without it the ownership-based deallocation rejects a
/// function that calls it. It reads the send buffer and reads and writes
/// the receive buffer (in place, they are one).
struct AllReduceEffects
    : MemoryEffectOpInterface::ExternalModel<AllReduceEffects,
                                             mpi::AllReduceOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    auto allReduce = cast<mpi::AllReduceOp>(op);
    effects.emplace_back(MemoryEffects::Read::get(),
                         &allReduce.getSendbufMutable());
    effects.emplace_back(MemoryEffects::Read::get(),
                         &allReduce.getRecvbufMutable());
    effects.emplace_back(MemoryEffects::Write::get(),
                         &allReduce.getRecvbufMutable());
  }
};

} // namespace

void mlir::tfm::registerMPIMemoryEffects(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, mpi::MPIDialect *) {
    mpi::AllReduceOp::attachInterface<AllReduceEffects>(*context);
  });
}
