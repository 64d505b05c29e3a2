//===- BufferizationPipeline.cpp - tensors to buffers, for both targets --===//

#include "codegen/linalg/BufferizationPipeline.h"
#include "codegen/linalg/Passes.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::tfm;

void mlir::tfm::buildBufferizationPipeline(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(createPlaceKernelReadsPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // The KV cache is updated in place; returning it would make deallocation
  // clone it on every call.
  pm.addPass(createDropReturnedArgumentsPass());
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferHoistingPass());
  pm.addNestedPass<func::FuncOp>(
      bufferization::createBufferLoopHoistingPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // An output the function does not own (a weight returned as it is:
  // LLaVA-NeXT's image_newline) is cloned by deallocation, a buffer the
  // caller releases: an allocation and a copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
}

