//===- Compiler.h - tfmc's stages as a library ------------------*- C++ -*-===//
//
// The compiler as functions that a driver (tools/tfmc), a test or another
// program calls: load a model into tfm IR, run the CPU pipeline's stages
// (tfm passes, lowering to linalg, the LLVM dialect), translate to LLVM IR,
// emit assembly or an object, and link an executable or a library with the
// model's weights and the runtime. `compile` runs them in order and writes
// what `CompileOptions::emit` asks for.
//
// Errors: bad user input comes back as an llvm::Error whose message says
// what and where. Failures already reported as MLIR diagnostics (a pass
// failing, IR that does not verify) come back as a DiagnosedError, which
// the caller should not print again.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_COMPILER_H
#define TFM_COMPILER_COMPILER_H

#include "codegen/Pipeline.h"
#include "codegen/packaging/ModelPackager.h"
#include "compiler/LibraryNames.h"
#include "compiler/Progress.h"
#include "frontend/ModelLoader.h"
#include "ir/TfmOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mlir::tfm {

/// What `compile` produces, in pipeline order.
enum class EmitKind {
  Tfm,       // tfm IR after the tfm-level passes
  Linalg,    // linalg on tensors
  LLVMMLIR,  // the LLVM dialect
  LLVMIR,    // optimized LLVM IR
  Asm,       // assembly
  Ptx,       // the GPU kernels' PTX (--target=cuda)
  Obj,       // an object file
  Exe,       // a native executable
  Lib,       // libNAME.so + NAME.h
  StaticLib, // libNAME.a + NAME.h
  CudaEmulator // a libcuda.so.1 stand-in running the kernels on the CPU
};

/// A failure whose diagnostics the MLIRContext has already reported.
class DiagnosedError : public llvm::ErrorInfo<DiagnosedError> {
public:
  static char ID;
  void log(llvm::raw_ostream &os) const override {
    os << "failed (see the diagnostics above)";
  }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
};

struct CompileOptions {
  /// A Hugging Face directory, a llama2.c .bin, or a tfm module (.mlir).
  std::string inputPath;
  /// A tokenizer file to use instead of the one beside the model (or the
  /// one a .mlir module's tfm.model names).
  std::string tokenizerPath;
  /// A chat template file (Jinja) the model carries instead of its own.
  std::string chatTemplatePath;
  /// A diffusion pipeline's image size (--image-size) and a single-file
  /// checkpoint's config folder (--config-folder).
  DiffusionOptions diffusion;
  /// PEFT LoRA adapters (--lora) merged into a decoder folder's weights.
  std::vector<LoraAdapterSpec> loraAdapters;
  /// llama.cpp's mmproj file (--mmproj): a GGUF text model's image side.
  std::string mmprojPath;
  /// The checkpoint (--checkpoint) a .mlir model module's weights are read
  /// from: a
  /// .safetensors file, a model.safetensors.index.json, or a folder holding
  /// either.
  std::string weightsPath;
  EmitKind emit = EmitKind::Exe;
  /// "-" or empty: stdout (text outputs only).
  std::string outputPath;
  /// The model's name (libNAME -> NAME) and the C identifier prefixing a
  /// library's symbols; both derived from outputPath when empty.
  std::string modelName, prefix;
  /// Weights in `<output>.weights` instead of embedded.
  bool externalWeights = false;
  /// The pass pipeline's options (tfm-codegen-pipeline); `prefix` is set from
  /// the above for libraries.
  const CodegenPipelineOptions *pipeline = nullptr;
  NativeTarget target;
  /// Runtime headers and archives the link step uses.
  LinkOptions runtime;
  /// Applied to every pass manager before it runs (MLIR's command-line
  /// options: IR printing, timing). May be empty.
  std::function<LogicalResult(PassManager &)> configurePassManager;
  /// Where stage timings nest (--mlir-timing). May be null.
  TimingScope *timing = nullptr;
  /// Where a long compile shows its stages and the weights written (the
  /// driver's, unless -q). May be null.
  Progress *progress = nullptr;
};

/// A model on its way through the compiler: the module, and when it is a
/// model (it has a tfm.model attribute) its weights and tokenizer.
struct CompilationUnit {
  OwningOpRef<ModuleOp> module;
  /// The module's tfm.model; null for a .mlir file of bare tfm functions,
  /// which is compiled as written.
  ModelAttr model;
  WeightStore weights;
  std::optional<TokenizerVocab> tokenizer;
  std::unique_ptr<llvm::LLVMContext> llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
};

/// Whether `path` names a tfm module (.mlir) rather than a model.
bool isTfmModuleFile(llvm::StringRef path);

/// What to produce when not told: an executable for a model (a .mlir file
/// given its checkpoint is one), the tfm IR for a bare .mlir file.
EmitKind defaultEmitKind(llvm::StringRef inputPath,
                         llvm::StringRef checkpointPath);

/// Stage 1: reads `options.inputPath` into tfm IR.
llvm::Expected<CompilationUnit> loadInput(MLIRContext &context,
                                          const CompileOptions &options);

/// Stage 2: runs the CPU pipeline's stages `first` through `last` on the
/// module. A module without tfm.model skips the tfm-level passes: it is
/// compiled as written (tfm-opt runs passes on it). tfm-kv-cache runs on
/// causal models that have no @prefill yet.
llvm::Error runPipelineStages(CompilationUnit &unit,
                              const CompileOptions &options,
                              PipelineStage first, PipelineStage last);

/// Stage 3: the LLVM dialect to optimized LLVM IR for `options.target`.
llvm::Error translateToLLVMIR(CompilationUnit &unit,
                              const CompileOptions &options);

/// Stage 4: assembly or an object file at `path`.
llvm::Error emitMachineCode(CompilationUnit &unit,
                            const CompileOptions &options, bool assembly,
                            llvm::StringRef path);

/// Stage 5: object + weights + tokenizer + runtime -> executable or library.
/// `description` is what the runtime learns about the model, read from the
/// module after the tfm-level passes (modelDescription).
llvm::Error linkExecutableOrLibrary(CompilationUnit &unit,
                                    const CompileOptions &options,
                                    const ModelDescription &description);

/// --emit=cuda-emulator, after the CUDA pipeline stopped at the kernels:
/// the kernels compiled for the host and linked with the CUDA emulator
/// into the shared library `options.outputPath` (runtime/cuda/cuda_emulator.h).
llvm::Error emitCudaEmulator(CompilationUnit &unit,
                             const CompileOptions &options);

/// What the runtime needs to know about a model after the tfm-level passes,
/// read from the module (tfm.model; each public function's tfm.input,
/// tfm.cache and tfm.output, for the table of entry points) and the unit's
/// tokenizer.
llvm::Expected<ModelDescription>
modelDescription(const CompilationUnit &unit, const CompileOptions &options);

/// What a compiler's context needs: every upstream dialect and extension (a
/// .mlir input may use any), tfm, and the LLVM IR translations.
void registerCompilerDialects(DialectRegistry &registry);

/// All stages in order, up to what `options.emit` asks for, written to
/// `options.outputPath`.
llvm::Error compile(MLIRContext &context, const CompileOptions &options);

/// The runtime a compiled model links with: an installed tfmc finds it
/// beside itself (<prefix>/bin/tfmc, <prefix>/lib, <prefix>/include/tfm);
/// a build-tree tfmc uses the folders it was configured with. `argv0`:
/// the running tool's argv[0].
LinkOptions locateRuntime(const char *argv0);

} // namespace mlir::tfm

#endif // TFM_COMPILER_COMPILER_H
