//===- Targets.h - what each code generation target is ----------*- C++ -*-===//
//
// Each target describes itself once, as IREE's LLVMCPU and LLVMGPU backends
// keep to their own: how the shared pipeline treats it, what it compiles
// (the compiler refuses the rest by name, compiler/Compiler.cpp's
// checkTarget) and its own pipeline from linalg to the LLVM dialect. The
// pipeline and the compiler read these rows instead of asking which target
// they have; a new target is a row of kTargets (Targets.cpp) and its
// folder.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_TARGETS_H
#define TFM_CODEGEN_TARGETS_H

#include "ir/TfmDialect.h"

#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::tfm {

struct CodegenPipelineOptions;

struct CodegenTarget {
  /// --target's value.
  llvm::StringLiteral name;
  /// Where a compiled model runs, for messages ("one GPU").
  llvm::StringLiteral runsOn;

  // How the shared pipeline treats the target.
  /// The runtime's GEMM kernels read the weights packed in their panels
  /// (tfm-lay-out-weights' pack-weights).
  bool packsWeights;
  /// Entry points' inputs are copied to the device (tfm-lower-to-linalg's
  /// host-input marks).
  bool deviceInputs;
  /// The serving engine's batched entry points (@prefill_batch,
  /// @decode_batch) are derived.
  bool batchedEntryPoints;
  /// A mixture of experts that several entry points hold is expanded once,
  /// in a function they call (tfm-expand-experts' share-functions); the
  /// GPU lowering compiles entry points without calls between them.
  bool sharedExpertFunctions;
  /// What an f32 checkpoint's matrices are stored as unless
  /// --weights-dtype says (empty: f32).
  llvm::StringLiteral f32CheckpointDtype;
  /// Its kernels are PTX, run on an NVIDIA GPU through runtime/cuda:
  /// --emit=ptx and --emit=cuda-emulator apply.
  bool ptxKernels;

  // What it compiles; the compiler refuses the rest by name.
  /// Weights in block formats (int8, int4, GGUF's K-quants, MXFP4).
  bool blockWeights;
  /// Per-weight dtypes (--weights-dtype-for).
  bool perWeightDtypes;
  /// KV caches narrower than f32 (--kv-dtype).
  bool narrowKVCache;
  /// Speculative decoding's @verify (--speculative).
  bool verifyEntry;
  /// Run-time LoRA adapters' updates (--lora-slots: tfm.lora's kernel).
  bool loraSlots;
  /// Gated DeltaNet (linear attention) layers.
  bool recurrentLayers;
  /// A model split over MPI ranks (--ranks).
  bool splitsOverRanks;
  /// The entry points' input roles it takes (empty: every role).
  llvm::ArrayRef<InputRole> inputRoles;

  /// Hands the tfm ops the target has kernels for to them, after the
  /// weights' layout and before the target-independent lowering to linalg
  /// (the CPU's runtime kernels; for CUDA only plain attention's call,
  /// which it makes a kernel of).
  void (*addKernelSelection)(OpPassManager &pm,
                             const CodegenPipelineOptions &options);
  /// The target's own pipeline: linalg on tensors (after the entry points'
  /// export) to the LLVM dialect.
  void (*addLowering)(OpPassManager &pm, const CodegenPipelineOptions &options);
};

/// The target called `name`, or null.
const CodegenTarget *findTarget(llvm::StringRef name);
/// The target the options name (the CPU's where they name none known: the
/// compiler refuses an unknown --target before building a pipeline).
const CodegenTarget &targetOf(const CodegenPipelineOptions &options);
/// Every target's name, for messages ("cpu or cuda").
std::string targetNames();

} // namespace mlir::tfm

#endif // TFM_CODEGEN_TARGETS_H
