//===- Targets.cpp - the code generation targets, one row each -----------===//

#include "codegen/Targets.h"
#include "codegen/Pipeline.h"
#include "codegen/cpu/Passes.h"
#include "codegen/linalg/Passes.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

void addCpuKernelSelection(OpPassManager &pm,
                           const CodegenPipelineOptions &options) {
  SelectCpuKernelsPassOptions kernels;
  kernels.fusedAttention = options.fusedAttention;
  kernels.bf16Products = options.computeDtype != "f32";
  // Only an explicit --compute-dtype rounds attention's operands: a bf16
  // checkpoint's default keeps its f32 attention.
  kernels.bf16Attention =
      options.computeDtype == "bf16" || options.computeDtype == "int8";
  pm.addPass(createSelectCpuKernelsPass(kernels));
}

// The runtime's kernels (GEMM panels, fused attention) are CPU code: the GPU
// target lowers everything to linalg but plain attention, whose call
// tfm-lower-attention-to-gpu makes a fused kernel.
void addCudaKernelSelection(OpPassManager &pm,
                            const CodegenPipelineOptions &options) {
  if (options.fusedAttention)
    pm.addPass(createCallAttentionKernelPass());
}

void addCpuLowering(OpPassManager &pm, const CodegenPipelineOptions &options) {
  LinalgToLLVMOptions llvm;
  llvm.planArena = options.planArena;
  llvm.annotateParallelLoops = options.annotateParallelLoops;
  llvm.parallelizeLoops = options.parallelizeLoops;
  buildLinalgToLLVMPipeline(pm, llvm);
}

void addCudaLowering(OpPassManager &pm, const CodegenPipelineOptions &options) {
  LinalgToCudaOptions cuda;
  cuda.cudaArch = options.cudaArch;
  cuda.planArena = options.planArena;
  cuda.tensorCores = options.cudaTensorCores;
  cuda.splitAttention = options.cudaSplitAttention;
  cuda.fuseNorms = options.cudaFuseNorms;
  cuda.fuseElementwise = options.cudaFuseElementwise;
  cuda.kernelsOnly = options.cudaKernelsOnly;
  buildLinalgToCudaPipeline(pm, cuda);
}

// Encoders' token types are one more id buffer copied in, a vision
// transformer's pixels (or a speech encoder's log-mel frames) one f32
// buffer, an encoder-decoder's decoder tokens one more id buffer.
constexpr InputRole kCudaInputRoles[] = {
    InputRole::token_ids, InputRole::token_type_ids, InputRole::features,
    InputRole::decoder_token_ids};

const CodegenTarget kTargets[] = {
    {
        .name = "cpu",
        .runsOn = "the CPU",
        .packsWeights = true,
        .deviceInputs = false,
        .batchedEntryPoints = true,
        .sharedExpertFunctions = true,
        .f32CheckpointDtype = "",
        .ptxKernels = false,
        .blockWeights = true,
        .perWeightDtypes = true,
        .narrowKVCache = true,
        .verifyEntry = true,
        .loraSlots = true,
        .recurrentLayers = true,
        .splitsOverRanks = true,
        .inputRoles = {},
        .addKernelSelection = addCpuKernelSelection,
        .addLowering = addCpuLowering,
    },
    {
        .name = "cuda",
        .runsOn = "one GPU",
        .packsWeights = false,
        .deviceInputs = true,
        // One sequence a call so far: the serving engine's batched entry
        // points are not derived.
        .batchedEntryPoints = false,
        .sharedExpertFunctions = false,
        // Half the bytes a decoded token reads, tensor cores for prefill's
        // products; f32 on request (--weights-dtype=f32), as GPU users
        // expect of PyTorch or vLLM.
        .f32CheckpointDtype = "bf16",
        .ptxKernels = true,
        // The GPU kernels read f32, bf16 and f16 weights; the block formats
        // have CPU kernels only so far.
        .blockWeights = false,
        .perWeightDtypes = false,
        .narrowKVCache = false,
        .verifyEntry = false,
        .loraSlots = false,
        .recurrentLayers = false,
        .splitsOverRanks = false,
        .inputRoles = kCudaInputRoles,
        .addKernelSelection = addCudaKernelSelection,
        .addLowering = addCudaLowering,
    },
};

} // namespace

const CodegenTarget *mlir::tfm::findTarget(llvm::StringRef name) {
  for (const CodegenTarget &target : kTargets)
    if (target.name == name)
      return &target;
  return nullptr;
}

const CodegenTarget &
mlir::tfm::targetOf(const CodegenPipelineOptions &options) {
  const CodegenTarget *target = findTarget(options.target);
  return target ? *target : kTargets[0];
}

std::string mlir::tfm::targetNames() {
  std::string names;
  for (size_t i = 0; i < std::size(kTargets); ++i)
    names += (i == 0                         ? ""
              : i + 1 == std::size(kTargets) ? " or "
                                             : ", ") +
             kTargets[i].name.str();
  return names;
}
