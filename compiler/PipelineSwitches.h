//===- PipelineSwitches.h - --no-X flags for the CPU pipeline ---*- C++ -*-===//
//
// The driver's --no-kv-cache, --no-fuse-qkv, ... are the boolean options of
// tfm-codegen-pipeline (CodegenPipelineOptions), each registered as a command-line
// flag named and described after the option it turns off, so that the two
// cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_PIPELINESWITCHES_H
#define TFM_COMPILER_PIPELINESWITCHES_H

#include "codegen/Pipeline.h"

#include "llvm/Support/CommandLine.h"

#include <memory>
#include <vector>

namespace mlir::tfm {

class PipelineSwitches {
public:
  /// Registers a --no-X flag in `category` for every switchable option X.
  explicit PipelineSwitches(llvm::cl::OptionCategory &category);
  /// Turns off in `options` what the parsed flags say.
  void apply(CodegenPipelineOptions &options) const;

private:
  std::vector<std::unique_ptr<llvm::cl::opt<bool>>> flags;
};

} // namespace mlir::tfm

#endif // TFM_COMPILER_PIPELINESWITCHES_H
