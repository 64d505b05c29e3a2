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
#include "ir/TfmOps.h"
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

#include <set>
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class EmitKind {
  Tfm,
  Linalg,
  LLVMMLIR,
  LLVMIR,
  Asm,
  Obj,
  Exe,
  Lib,
  StaticLib
};

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
               clEnumValN(EmitKind::Exe, "exe", "a native executable"),
               clEnumValN(EmitKind::Lib, "lib",
                          "a shared library libNAME.so + NAME.h"),
               clEnumValN(EmitKind::StaticLib, "staticlib",
                          "a static library libNAME.a + NAME.h")));
cl::opt<std::string> symbolPrefix(
    "prefix",
    cl::desc("C identifier prefixing a library's symbols (default: NAME of "
             "libNAME)"),
    cl::value_desc("identifier"));
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
cl::opt<bool> noFuseQKV("no-fuse-qkv",
                        cl::desc("Keep Q, K and V as separate projections"),
                        cl::init(false));
cl::opt<bool> noFuseMLP("no-fuse-mlp",
                        cl::desc("Keep activations and gated MLPs apart from "
                                 "their projections"),
                        cl::init(false));
cl::opt<bool> noFuseNorm("no-fuse-norm",
                         cl::desc("Keep residual adds apart from the norms "
                                  "that follow them"),
                         cl::init(false));
cl::opt<bool> noFusedAttention(
    "no-fused-attention",
    cl::desc("Lower attention to linalg with materialized scores instead of "
             "the runtime's fused kernel"),
    cl::init(false));
cl::opt<bool> noPackWeights(
    "no-pack-weights",
    cl::desc("Keep linear weights in the checkpoint layout (OpenBLAS GEMM) "
             "instead of panels for the runtime's GEMM kernel"),
    cl::init(false));
cl::opt<bool> noPlanArena(
    "no-plan-arena",
    cl::desc("Allocate each temporary buffer on its own instead of in one "
             "arena planned at compile time"),
    cl::init(false));
cl::opt<bool> noAnnotateParallelLoops(
    "no-annotate-parallel-loops",
    cl::desc("Do not tell LLVM that the iterations of linalg's parallel "
             "loops are independent (leaves them to its alias analysis)"),
    cl::init(false));
cl::opt<bool> noParallelizeLoops(
    "no-parallelize-loops",
    cl::desc("Run the generated loops (norms, activations, ...) on the "
             "calling thread only instead of the runtime's thread pool"),
    cl::init(false));
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

/// The runtime tfmc links with: an installed tfmc finds it beside itself
/// (<prefix>/bin/tfmc, <prefix>/lib, <prefix>/include/tfmc); a build-tree
/// tfmc uses the source and build folders it was configured with.
void locateRuntime(const char *argv0, tfm::LinkOptions &options) {
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&locateRuntime));
  llvm::SmallString<256> prefix(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(exe)));
  llvm::SmallString<256> installedHeader(prefix);
  llvm::sys::path::append(installedHeader, "include", "tfmc", "runtime",
                          "tfm_runtime.h");
  std::string libDir = TFM_RUNTIME_LIBRARY_DIR;
  options.runtimeIncludeDir = TFM_RUNTIME_INCLUDE_DIR;
  if (llvm::sys::fs::exists(installedHeader)) {
    libDir = (prefix + "/lib").str();
    options.runtimeIncludeDir = (prefix + "/include/tfmc").str();
  }
  options.runtimeLibraryDir = libDir;
  options.runtimeLibrary = libDir + "/libtfmrt.a";
  options.runtimeMainLibrary = libDir + "/libtfmrt_main.a";
}

/// A C identifier from a file name ("libstory-2.so" -> "story_2").
std::string identifierFrom(llvm::StringRef name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "m_" + id;
  return id;
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
  bool library = emit == EmitKind::Lib || emit == EmitKind::StaticLib;
  if ((library || emit == EmitKind::Exe) && !model)
    return fail("a library needs a model with weights, not a .mlir file "
                "(use --emit=obj)");
  // Binary outputs need a file.
  static const char *const binaryEmitNames[] = {"obj", "exe", "lib",
                                                "staticlib"};
  if (emit >= EmitKind::Obj && outputPath.empty())
    return fail(llvm::Twine("--emit=") +
                binaryEmitNames[int(emit) - int(EmitKind::Obj)] +
                " needs an output file (-o)");
  // libNAME.so / libNAME.a: NAME names the model and prefixes its symbols.
  llvm::StringRef stem = llvm::sys::path::stem(outputPath);
  if (library)
    stem.consume_front("lib");
  std::string modelName = stem.str();
  std::string prefix = symbolPrefix.empty() ? identifierFrom(modelName)
                                            : symbolPrefix.getValue();
  if (identifierFrom(prefix) != prefix)
    return fail("--prefix must be a C identifier, got '" + prefix + "'");

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
  tfmOptions.fuseQKV = !noFuseQKV;
  tfmOptions.fuseMLP = !noFuseMLP;
  tfmOptions.fuseNorm = !noFuseNorm;
  if (failed(runPipeline(*module, timing, [&](OpPassManager &pm) {
        if (model)
          tfm::buildTfmPipeline(pm, tfmOptions);
      })))
    return 1;
  // The cache the runtime allocates: @prefill's cache argument.
  std::vector<int64_t> cacheShape;
  int64_t slidingWindow = 0;
  if (auto prefill = module->lookupSymbol<func::FuncOp>("prefill")) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(prefill.getArgumentTypes().back()).getShape();
    cacheShape.assign(shape.begin(), shape.end());
    // The runtime slides the cache only when every layer has one window.
    std::set<int64_t> windows;
    prefill.walk([&](tfm::AttentionOp op) {
      windows.insert(op.getWindow().value_or(0));
    });
    if (windows.size() == 1)
      slidingWindow = *windows.begin();
  }
  if (emit == EmitKind::Tfm)
    return print();
  tfm::LowerToLinalgPassOptions linalgOptions;
  linalgOptions.fusedAttention = !noFusedAttention;
  linalgOptions.packWeights = !noPackWeights;
  if (failed(runPipeline(*module, timing, [&](OpPassManager &pm) {
        tfm::buildLowerToLinalgPipeline(pm, linalgOptions);
      })))
    return 1;
  if (emit == EmitKind::Linalg)
    return print();
  // Public functions are called from C through MLIR's C interface; in a
  // library they carry the model's prefix, so that models link together.
  SymbolTable symbols(*module);
  for (auto func : llvm::make_early_inc_range(module->getOps<func::FuncOp>())) {
    if (!func.isPublic())
      continue;
    func->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));
    std::string renamed = prefix + "_" + func.getName().str();
    if (library && failed(symbols.rename(func, renamed)))
      return fail("cannot rename @" + func.getName() + " to @" + renamed);
  }
  tfm::LinalgToLLVMOptions llvmOptions;
  llvmOptions.planArena = !noPlanArena;
  llvmOptions.annotateParallelLoops = !noAnnotateParallelLoops;
  llvmOptions.parallelizeLoops = !noParallelizeLoops;
  if (failed(runPipeline(*module, timing, [&](OpPassManager &pm) {
        tfm::buildLinalgToLLVMPipeline(pm, llvmOptions);
      })))
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
  // The generated functions are reached through the model description only:
  // a library exports nothing else.
  if (library)
    for (llvm::Function &f : *llvmModule)
      if (!f.isDeclaration() && !f.hasLocalLinkage())
        f.setVisibility(llvm::GlobalValue::HiddenVisibility);
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
  description.name = modelName;
  description.source = inputPath;
  description.hiddenSize = model->hiddenSize;
  description.numLayers = model->numLayers;
  description.numHeads = model->numHeads;
  description.numKVHeads = model->numKVHeads;
  description.vocabSize = model->vocabSize;
  description.maxContext = model->maxContext;
  description.cacheShape = cacheShape;
  description.slidingWindow = slidingWindow;
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
  link.kind = emit == EmitKind::Lib         ? tfm::OutputKind::SharedLibrary
              : emit == EmitKind::StaticLib ? tfm::OutputKind::StaticLibrary
                                            : tfm::OutputKind::Executable;
  link.outputPath = outputPath;
  link.externalWeights = weightsMode == "external";
  link.prefix = prefix;
  llvm::SmallString<256> headerPath(llvm::sys::path::parent_path(outputPath));
  llvm::sys::path::append(headerPath, modelName + ".h");
  link.headerPath = headerPath.str().str();
  if (library) {
    link.forwardSymbol = "_mlir_ciface_" + prefix + "_forward";
    link.prefillSymbol = "_mlir_ciface_" + prefix + "_prefill";
    link.decodeSymbol = "_mlir_ciface_" + prefix + "_decode";
  }
  locateRuntime(argv[0], link);
  auto lookup = [&](llvm::StringRef name) -> llvm::ArrayRef<float> {
    const tfm::WeightTensor *tensor = model->weights.lookup(name);
    return tensor ? llvm::ArrayRef<float>(tensor->values)
                  : llvm::ArrayRef<float>();
  };
  llvm::Error linked = [&] {
    TimingScope linkTiming = timing.nest("Package weights and link");
    return tfm::linkModel(*module, lookup, description, objectPath, link);
  }();
  llvm::sys::fs::remove(objectPath);
  if (linked)
    return fail(llvm::toString(std::move(linked)));
  return 0;
}
