//===- Passes.td - codegen passes (tfm -> linalg -> LLVM) --*- tablegen -*-===//

#ifndef TFM_CODEGEN_PASSES_TD
#define TFM_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalgPass : Pass<"tfm-lower-to-linalg", "ModuleOp"> {
  let summary = "Lower tfm ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Each tfm op becomes linalg structured ops on tensors: `tfm.linear` a
    `linalg.matmul` with a transposed weight (checkpoint layout `[out, in]`),
    norms and softmax reductions plus elementwise `linalg.generic`s, and
    `tfm.attention` scores, masked softmax and weighted sum (the scores are
    materialized; the fused flash-style kernel is a separate lowering).

    Weights: the pass lays out every distinct `tfm.weight` of the module in
    one byte blob (64-byte aligned, in order of first use), records the
    layout as the module attribute `tfm.weight_layout` (name -> byte offset)
    and gives each function that reads weights a leading
    `memref<?xi8>` argument (location "weights"), the blob's base. A
    `tfm.weight` becomes a
    `memref.view` of that blob at its offset.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect"
  ];
}

#endif // TFM_CODEGEN_PASSES_TD
