//===- PipelineSwitches.cpp - --no-X flags for the CPU pipeline ---------===//

#include "compiler/PipelineSwitches.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/StringSaver.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

using Switch = CpuPipelineOptions::Option<bool> CpuPipelineOptions::*;

/// The options that a --no-X flag turns off.
const Switch kSwitchable[] = {
    &CpuPipelineOptions::kvCache,        &CpuPipelineOptions::fuseQKV,
    &CpuPipelineOptions::fuseMLP,        &CpuPipelineOptions::fuseNorm,
    &CpuPipelineOptions::fusedAttention, &CpuPipelineOptions::packWeights,
    &CpuPipelineOptions::planArena,
    &CpuPipelineOptions::annotateParallelLoops,
    &CpuPipelineOptions::parallelizeLoops,
    &CpuPipelineOptions::cudaTensorCores,
    &CpuPipelineOptions::cudaSplitAttention,
    &CpuPipelineOptions::cudaFuseNorms,
    &CpuPipelineOptions::cudaFuseElementwise};

} // namespace

PipelineSwitches::PipelineSwitches(llvm::cl::OptionCategory &category) {
  // Names and descriptions outlive the flags that point at them.
  static CpuPipelineOptions defaults;
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

void PipelineSwitches::apply(CpuPipelineOptions &options) const {
  for (auto [field, flag] : llvm::zip_equal(kSwitchable, flags))
    if (*flag)
      options.*field = false;
}
