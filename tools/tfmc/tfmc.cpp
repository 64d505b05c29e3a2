//===- tfmc.cpp - the tfmc compiler driver ------------------------------===//
//
// `tfmc MODEL -o NAME` compiles a model (a Hugging Face directory, a llama2.c
// .bin, or a tfm module in .mlir form) into a native executable; `--emit=`
// stops at an earlier stage and writes it to -o or stdout. Honours MLIR's own
// options (--mlir-print-ir-after-all, --mlir-timing, ...).
//
//===----------------------------------------------------------------------===//

#include "codegen/CpuPipeline.h"
#include "codegen/ModelPackager.h"
#include "codegen/Passes.h"
#include "frontend/ModelLoader.h"
#include "ir/TfmDialect.h"
#include "passes/Pipeline.h"
#include "runtime/tfm_format.h"
#include "tools/common/DebugOption.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class EmitKind { Tfm, Linalg, LLVMMLIR, LLVMIR, Asm, Obj, Exe };

cl::opt<std::string> inputPath(
    cl::Positional,
    cl::desc("<model: Hugging Face directory, llama2.c .bin, or .mlir>"),
    cl::Required);
cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                cl::value_desc("path"));
cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce (default: exe for models, tfm for .mlir)"),
    cl::values(clEnumValN(EmitKind::Tfm, "tfm", "tfm dialect IR"),
               clEnumValN(EmitKind::Linalg, "linalg", "linalg on tensors"),
               clEnumValN(EmitKind::LLVMMLIR, "llvm-mlir",
                          "the LLVM dialect"),
               clEnumValN(EmitKind::LLVMIR, "llvm-ir", "optimized LLVM IR"),
               clEnumValN(EmitKind::Asm, "asm", "assembly"),
               clEnumValN(EmitKind::Obj, "obj", "an object file"),
               clEnumValN(EmitKind::Exe, "exe", "a native executable")));
cl::opt<std::string> tokenizerPath(
    "tokenizer",
    cl::desc("Tokenizer file (tokenizer.bin or tokenizer.model) when it is "
             "not beside the model"),
    cl::value_desc("path"));
cl::opt<std::string> weightsMode(
    "weights", cl::desc("embedded (default) or external (<output>.weights)"),
    cl::init("embedded"));
cl::opt<std::string> mcpu("mcpu",
                          cl::desc("Target CPU (default: the compiling "
                                   "machine's)"),
                          cl::init("native"));
cl::opt<int64_t> maxContext(
    "max-context",
    cl::desc("KV cache capacity in positions (default: the model's maximum "
             "context)"),
    cl::init(0));
cl::opt<bool> noKVCache("no-kv-cache",
                        cl::desc("Do not derive @prefill/@decode: the "
                                 "executable recomputes the whole sequence "
                                 "for every token"),
                        cl::init(false));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"),
                           cl::Prefix, cl::init(3));

int fail(const llvm::Twine &message) {
  llvm::errs() << "tfmc: error: " << message << "\n";
  return 1;
}

/// Writes `print(os)` to -o or stdout.
int writeOutput(llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string error;
  auto output = openOutputFile(outputPath.empty() ? std::string("-") : outputPath.getValue(), &error);
  if (!output)
    return fail(error);
  print(output->os());
  output->keep();
  return 0;
}

/// Runs `build`'s passes over `module` with MLIR's command-line options.
LogicalResult runPipeline(ModuleOp module, TimingScope &timing,
                          llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.enableTiming(timing);
  build(pm);
  return pm.run(module);
}

/// The runtime: headers under the source root, archives in the build tree.
/// TFMC_RUNTIME_DIR (a folder with include/ and lib/) overrides both.
void locateRuntime(tfm::LinkOptions &options) {
  if (const char *dir = std::getenv("TFMC_RUNTIME_DIR")) {
    options.runtimeIncludeDir = std::string(dir) + "/include";
    options.runtimeLibrary = std::string(dir) + "/lib/libtfmrt.a";
    options.runtimeMainLibrary = std::string(dir) + "/lib/libtfmrt_main.a";
    return;
  }
  options.runtimeIncludeDir = TFM_RUNTIME_INCLUDE_DIR;
  options.runtimeLibrary = TFM_RUNTIME_LIBRARY_DIR "/libtfmrt.a";
  options.runtimeMainLibrary = TFM_RUNTIME_LIBRARY_DIR "/libtfmrt_main.a";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  tfm::registerDebugOnlyOption();
  cl::ParseCommandLineOptions(argc, argv, "tfmc: transformer model compiler\n");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<tfm::TfmDialect>();
  tfm::registerLLVMTranslations(registry);
  MLIRContext context(registry);
  // Users read these diagnostics; the generic op dump adds only noise.
  context.printOpOnDiagnostic(false);

  if (weightsMode != "embedded" && weightsMode != "external")
    return fail("--weights must be 'embedded' or 'external', got '" +
                weightsMode + "'");

  // Read the model: tfm IR plus, for real models, weights and tokenizer.
  bool isMlir = llvm::StringRef(inputPath).ends_with(".mlir");
  std::optional<tfm::LoadedModel> model;
  OwningOpRef<ModuleOp> module;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  if (isMlir) {
    std::string error;
    auto input = openInputFile(inputPath, &error);
    if (!input)
      return fail(error);
    sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return 1;
  } else {
    llvm::Expected<tfm::LoadedModel> loaded =
        tfm::loadModel(context, inputPath, tokenizerPath);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    model = std::move(*loaded);
    module = std::move(model->module);
  }
  EmitKind emit = emitKind.getNumOccurrences()
                      ? emitKind.getValue()
                      : (isMlir ? EmitKind::Tfm : EmitKind::Exe);
  if (emit == EmitKind::Exe && !model)
    return fail("an executable needs a model with weights, not a .mlir file "
                "(use --emit=obj)");
  if ((emit == EmitKind::Exe || emit == EmitKind::Obj) && outputPath.empty())
    return fail("--emit=" + std::string(emit == EmitKind::Exe ? "exe" : "obj") +
                " needs an output file (-o)");

  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  auto print = [&] {
    return writeOutput([&](llvm::raw_ostream &os) { module->print(os); });
  };

  if (maxContext < 0 || (model && maxContext > model->maxContext))
    return fail("--max-context must be between 1 and the model's maximum "
                "context (" +
                llvm::Twine(model ? model->maxContext : 0) + "), got " +
                llvm::Twine(maxContext));
  // Models go through the tfm-level passes; a .mlir file is compiled as
  // written (run tfm-opt for passes).
  tfm::TfmPipelineOptions tfmOptions;
  tfmOptions.kvCache = model && model->causalDecoder && !noKVCache;
  tfmOptions.maxContext = maxContext;
  if (failed(runPipeline(*module, timing, [&](OpPassManager &pm) {
        if (model)
          tfm::buildTfmPipeline(pm, tfmOptions);
      })))
    return 1;
  // The cache the runtime allocates: @prefill's cache argument.
  std::vector<int64_t> cacheShape;
  if (auto prefill = module->lookupSymbol<func::FuncOp>("prefill"))
    if (prefill.getNumArguments() == 3) {
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(prefill.getArgumentTypes()[2]).getShape();
      cacheShape.assign(shape.begin(), shape.end());
    }
  if (emit == EmitKind::Tfm)
    return print();
  if (failed(runPipeline(*module, timing, tfm::buildLowerToLinalgPipeline)))
    return 1;
  if (emit == EmitKind::Linalg)
    return print();
  // Public functions are called from C through MLIR's C interface.
  for (auto func : module->getOps<func::FuncOp>())
    if (func.isPublic())
      func->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));
  if (failed(runPipeline(*module, timing, tfm::buildLinalgToLLVMPipeline)))
    return 1;
  if (emit == EmitKind::LLVMMLIR)
    return print();

  tfm::NativeTarget target;
  target.cpu = mcpu;
  target.optLevel = std::min(optLevel.getValue(), 3u);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    TimingScope translateTiming = timing.nest("Translate and optimize LLVM IR");
    llvmModule = tfm::translateAndOptimize(*module, llvmContext, target);
  }
  if (!llvmModule)
    return 1;
  if (emit == EmitKind::LLVMIR)
    return writeOutput([&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); });
  if (emit == EmitKind::Asm || emit == EmitKind::Obj) {
    std::string error = tfm::emitNativeCode(
        *llvmModule, target, emit == EmitKind::Asm,
        outputPath.empty() ? "-" : outputPath.getValue());
    return error.empty() ? 0 : fail(error);
  }

  // An executable: object + weights + tokenizer + runtime.
  llvm::SmallString<128> objectPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("tfmc-model", "o",
                                                              objectPath))
    return fail("cannot create a temporary object file: " + ec.message());
  {
    TimingScope codegenTiming = timing.nest("Emit object code");
    std::string error =
        tfm::emitNativeCode(*llvmModule, target, /*assembly=*/false, objectPath);
    if (!error.empty())
      return fail(error);
  }
  tfm::ModelDescription description;
  description.name = llvm::sys::path::stem(outputPath).str();
  description.vocabSize = model->vocabSize;
  description.maxContext = model->maxContext;
  description.cacheShape = cacheShape;
  description.bosToken = model->bosToken;
  description.eosToken = model->eosToken;
  description.addBos = model->addBos;
  if (model->tokenizer)
    description.tokenizer = tfm::TokenizerBlobInput{
        model->tokenizer->kind == tfm::TokenizerVocab::Kind::ByteLevelBpe
            ? uint32_t(TFM_TOKENIZER_BYTE_LEVEL_BPE)
            : uint32_t(TFM_TOKENIZER_SCORE_BPE),
        model->tokenizer->pieces, model->tokenizer->scores,
        model->tokenizer->merges};
  tfm::LinkOptions link;
  link.outputPath = outputPath;
  link.externalWeights = weightsMode == "external";
  locateRuntime(link);
  auto lookup = [&](llvm::StringRef name) -> llvm::ArrayRef<float> {
    const tfm::WeightTensor *tensor = model->weights.lookup(name);
    return tensor ? llvm::ArrayRef<float>(tensor->values)
                  : llvm::ArrayRef<float>();
  };
  llvm::Error linked = [&] {
    TimingScope linkTiming = timing.nest("Package weights and link");
    return tfm::linkExecutable(*module, lookup, description, objectPath, link);
  }();
  llvm::sys::fs::remove(objectPath);
  if (linked)
    return fail(llvm::toString(std::move(linked)));
  return 0;
}
