//===- CpuPipeline.cpp - linalg to the LLVM dialect for the CPU ----------===//
//
// Upstream passes do the heavy lifting: one-shot bufferization across
// function boundaries (linalg/BufferizationPipeline.cpp), linalg to loops,
// and the conversions to the LLVM dialect (the host's, codegen/host).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuPipeline.h"
#include "codegen/cpu/Passes.h"
#include "codegen/linalg/BufferizationPipeline.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tfm;

void mlir::tfm::buildLinalgToLLVMPipeline(OpPassManager &pm,
                                          const LinalgToLLVMOptions &options) {
  // No linalg-fuse-elementwise-ops: its reshape propagation pushes the
  // heads' expand_shape through projections and turns their linalg.matmul
  // into 4-d generics that no longer reach BLAS.
  // A model split over ranks sums its partial products through MPI.
  LowerCollectivesToMPIPassOptions collectives;
  collectives.implementation = options.mpiImplementation;
  pm.addPass(createLowerCollectivesToMPIPass(collectives));
  buildBufferizationPipeline(pm);
  // GEMMs and GEMVs go to the runtime's BLAS kernel.
  pm.addPass(createLowerMatmulToRuntimePass());
  // Deallocation frees every buffer at the function's end (hoisting put
  // every allocation at its start): without an arena, a prefill would hold
  // all its layers' activations at once.
  if (options.planArena)
    pm.addNestedPass<func::FuncOp>(createPlanArenaPass());
  // Parallel dimensions stay scf.parallel, so that their independence
  // reaches LLVM (tfm-annotate-parallel-loops below).
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  // Subviews (the KV cache's planes) expand into affine.apply: before
  // lower-affine.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Buffers come from the runtime's cache (runtime/core/buffer_cache.c), not
  // straight from malloc. Converted while loops are still structured: the
  // annotation pass tags the LLVM loads and stores inside each loop.
  pm.addPass(createConvertMPIToLLVMPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  if (options.parallelizeLoops)
    pm.addPass(createParallelizeLoopsPass());
  if (options.annotateParallelLoops)
    pm.addNestedPass<func::FuncOp>(createAnnotateParallelLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  // Activations as polynomials that vectorize; their FMAs (and what LLVM
  // has intrinsics for) become LLVM intrinsics, which vectorize, before
  // what remains goes to libm (math-to-libm would make each FMA a call).
  pm.addPass(createApproximateMathPass());
  addHostToLLVMPasses(pm, /*launchesKernels=*/false);
}
