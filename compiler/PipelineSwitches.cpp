//===- PipelineSwitches.cpp - --no-X flags for the CPU pipeline ---------===//

#include "compiler/PipelineSwitches.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/StringSaver.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

using Switch = CodegenPipelineOptions::Option<bool> CodegenPipelineOptions::*;

/// The options that a --no-X flag turns off.
const Switch kSwitchable[] = {&CodegenPipelineOptions::kvCache,
                              &CodegenPipelineOptions::fuseQKV,
                              &CodegenPipelineOptions::fuseMLP,
                              &CodegenPipelineOptions::fuseNorm,
                              &CodegenPipelineOptions::fusedAttention,
                              &CodegenPipelineOptions::packWeights,
                              &CodegenPipelineOptions::planArena,
                              &CodegenPipelineOptions::convolutionsAsGemm,
                              &CodegenPipelineOptions::expandLatentAttention,
                              &CodegenPipelineOptions::annotateParallelLoops,
                              &CodegenPipelineOptions::parallelizeLoops,
                              &CodegenPipelineOptions::cudaTensorCores,
                              &CodegenPipelineOptions::cudaSplitAttention,
                              &CodegenPipelineOptions::cudaFuseNorms,
                              &CodegenPipelineOptions::cudaFuseElementwise};

} // namespace

PipelineSwitches::PipelineSwitches(llvm::cl::OptionCategory &category) {
  // Names and descriptions outlive the flags that point at them.
  static CodegenPipelineOptions defaults;
  static llvm::BumpPtrAllocator allocator;
  static llvm::StringSaver names(allocator);
  for (Switch field : kSwitchable) {
    llvm::cl::Option &option = defaults.*field;
    flags.push_back(std::make_unique<llvm::cl::opt<bool>>(
        names.save("no-" + option.ArgStr),
        llvm::cl::desc(names.save("Turn off: " + option.HelpStr)),
        llvm::cl::cat(category)));
  }
}

void PipelineSwitches::apply(CodegenPipelineOptions &options) const {
  for (auto [field, flag] : llvm::zip_equal(kSwitchable, flags))
    if (*flag)
      options.*field = false;
}
