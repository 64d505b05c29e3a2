//===- Compiler.cpp - tfmc's stages as a library ------------------------===//
//
// See Compiler.h. Each stage checks what it needs from the earlier ones and
// the options, so that a caller can stop after any of them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "codegen/Targets.h"
#include "codegen/cuda/KernelsOnHost.h"
#include "frontend/ModelLoader.h"
#include "frontend/builders/WeightDeclarations.h"
#include "frontend/families/GgufModel.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/Safetensors.h"
#include "frontend/tokenizers/ChatTemplates.h"
#include "ir/DiffusionAttr.h"
#include "ir/StopTokensAttr.h"
#include "ir/TfmOps.h"
#include "tfm/tfm_format.h"
#include "tfm/tfm_model_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <set>

using namespace mlir;
using namespace mlir::tfm;

char DiagnosedError::ID = 0;

namespace {

llvm::Error diagnosed() { return llvm::make_error<DiagnosedError>(); }

/// Whether the module has recurrent layers (Gated DeltaNet's), which only
/// the CPU runs.
bool hasRecurrentLayers(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return isa<CausalConv1dOp, GatedDeltaRuleOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether tfm-kv-cache applies: a @forward whose attention is all causal
/// (recurrent layers beside it keep their states in a cache of their own),
/// and no @prefill derived already (a module emitted after the tfm
/// passes).
bool wantsKVCache(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || module.lookupSymbol("prefill"))
    return false;
  // An encoder-decoder: its decoder is cached, its encoder run once.
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    if (auto role = forward.getArgAttrOfType<InputRoleAttr>(i, kInputArgAttrName);
        role && role.getValue() == InputRole::decoder_token_ids)
      return true;
  WalkResult walk = forward.walk([](AttentionOp op) {
    return op.getCausal() ? WalkResult::advance() : WalkResult::interrupt();
  });
  return !walk.wasInterrupted();
}

/// The rows of the smallest table `ids` indexes (tfm.embedding): what its
/// values must stay below; 0 when it indexes none.
int64_t indexBound(Value ids) {
  int64_t bound = 0;
  for (Operation *user : ids.getUsers())
    if (auto lookup = dyn_cast<EmbeddingOp>(user);
        lookup && lookup.getIds() == ids) {
      int64_t rows = lookup.getTable().getType().getDimSize(0);
      if (!ShapedType::isDynamic(rows))
        bound = bound ? std::min(bound, rows) : rows;
    }
  return bound;
}

/// A tfm_dtype for an element type the ABI passes.
std::optional<int32_t> abiDtype(Type type) {
  if (type.isF32())
    return TFM_DTYPE_F32;
  if (type.isSignlessInteger(32))
    return TFM_DTYPE_I32;
  if (type.isSignlessInteger(8))
    return TFM_DTYPE_I8;
  if (type.isBF16())
    return TFM_DTYPE_BF16;
  if (type.isF16())
    return TFM_DTYPE_F16;
  if (type.isIndex() || type.isSignlessInteger(64))
    return TFM_DTYPE_I64;
  return std::nullopt;
}

/// The entry points' table (tfm_model_abi.h) from the public functions'
/// tfm.input, tfm.cache and tfm.output attributes; caches with the same
/// description are one cache of the model.
llvm::Error describeEntryPoints(ModuleOp module, ModelDescription &model) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    EntryPointDescription entry;
    entry.name = func.getSymName().str();
    auto fail = [&](const llvm::Twine &what) {
      return makeError("entry point @" + entry.name + ": " + what);
    };
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      Type type = func.getArgumentTypes()[i];
      auto shaped = dyn_cast<ShapedType>(type);
      TensorDescription tensor;
      std::optional<int32_t> dtype =
          abiDtype(shaped ? shaped.getElementType() : type);
      if (!dtype) {
        std::string typeText;
        llvm::raw_string_ostream(typeText) << type;
        return fail("argument " + llvm::Twine(i) + " of type " + typeText +
                    " has no runtime ABI dtype");
      }
      tensor.dtype = *dtype;
      if (shaped)
        for (int64_t d : shaped.getShape())
          tensor.shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      if (auto cache = func.getArgAttrOfType<CacheAttr>(i, kCacheArgAttrName)) {
        tensor.cacheKind = int32_t(cache.getKind());
        tensor.window = cache.getWindow();
        auto known = llvm::find(model.caches, tensor);
        if (known == model.caches.end())
          known = model.caches.insert(model.caches.end(), tensor);
        entry.arguments.push_back(-1 - int32_t(entry.caches.size()));
        entry.caches.push_back(known - model.caches.begin());
        continue;
      }
      auto role = func.getArgAttrOfType<InputRoleAttr>(i, kInputArgAttrName);
      if (!role)
        return fail("argument " + llvm::Twine(i) +
                    " has no tfm.input or tfm.cache");
      tensor.role = int32_t(role.getValue());
      // Ids index tables; positions are checked against the cache.
      if (role.getValue() == InputRole::token_ids ||
          role.getValue() == InputRole::token_type_ids ||
          role.getValue() == InputRole::decoder_token_ids)
        tensor.bound = indexBound(func.getArgument(i));
      entry.arguments.push_back(entry.inputs.size());
      entry.inputs.push_back(tensor);
    }
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
      auto role =
          func.getResultAttrOfType<OutputRoleAttr>(i, kOutputResultAttrName);
      if (!role)
        continue; // an updated cache, returned for the tensor semantics
      auto type = cast<ShapedType>(func.getResultTypes()[i]);
      TensorDescription tensor;
      tensor.role = TFM_ROLE_LOGITS + int32_t(role.getValue());
      tensor.dtype = abiDtype(type.getElementType()).value_or(-1);
      for (int64_t d : type.getShape())
        tensor.shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      entry.outputs.push_back(tensor);
    }
    // One or more f32 results (SDXL's text encoders: the states and the
    // pooled embedding).
    if (entry.outputs.empty() ||
        llvm::any_of(entry.outputs, [](const TensorDescription &t) {
          return t.dtype != TFM_DTYPE_F32;
        }))
      return fail("expected f32 tfm.outputs, got " +
                  llvm::Twine(entry.outputs.size()) + " outputs");
    model.entryPoints.push_back(std::move(entry));
  }
  return llvm::Error::success();
}

/// Reads the checkpoint at `path` and checks that it holds every weight the
/// module declares, with its shape.
llvm::Error readWeightsOfModule(ModuleOp module, llvm::StringRef path,
                                WeightStore &weights) {
  llvm::Error read =
      llvm::sys::fs::is_directory(path) ? readSafetensorsCheckpoint(path, weights)
      : path.ends_with(".index.json")
          ? readSafetensorsCheckpoint(llvm::sys::path::parent_path(path),
                                      weights)
      : path.ends_with(".gguf") ? readGgufWeights(path, weights)
                                : readSafetensorsFile(path, weights);
  if (read)
    return read;
  std::vector<std::string> errors;
  for (WeightDeclOp decl : module.getOps<WeightDeclOp>()) {
    std::vector<int64_t> shape(decl.getTensorType().getShape());
    if (std::optional<std::string> error = weights.mismatch(
            path, decl.getSymName(), shape, "the module declares"))
      errors.push_back(std::move(*error));
  }
  if (!errors.empty())
    return makeError(llvm::join(errors, "\n"));
  return llvm::Error::success();
}

bool isLibrary(EmitKind emit) {
  return emit == EmitKind::Lib || emit == EmitKind::StaticLib;
}

/// The model's name: the output's stem, without "lib" for a library.
std::string modelNameOf(const CompileOptions &options) {
  if (!options.modelName.empty())
    return options.modelName;
  llvm::StringRef stem = llvm::sys::path::stem(options.outputPath);
  if (isLibrary(options.emit))
    stem.consume_front("lib");
  return stem.str();
}

std::string prefixOf(const CompileOptions &options) {
  return options.prefix.empty() ? identifierFrom(modelNameOf(options))
                                : options.prefix;
}

/// Writes `print(os)` to the output file or stdout.
llvm::Error writeText(const CompileOptions &options,
                      llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string error;
  auto output = openOutputFile(
      options.outputPath.empty() ? std::string("-") : options.outputPath,
      &error);
  if (!output)
    return makeError(error);
  print(output->os());
  output->keep();
  return llvm::Error::success();
}

/// --target and what it can compile: the options and the model against
/// the target's description (codegen/Targets.h), each limit refused by
/// name.
llvm::Error checkTarget(const CompileOptions &options,
                        const CompilationUnit &unit) {
  std::string name =
      options.pipeline ? options.pipeline->target.getValue() : "cpu";
  const CodegenTarget *target = findTarget(name);
  if (!target)
    return makeError("--target must be " + targetNames() + ", got '" + name +
                     "'");
  std::string flag = "--target=" + name;
  if (options.emit == EmitKind::Ptx && !target->ptxKernels)
    return makeError("--emit=ptx needs --target=cuda");
  if (options.emit == EmitKind::CudaEmulator && !target->ptxKernels)
    return makeError("--emit=cuda-emulator needs --target=cuda");
  if (!unit.model)
    return llvm::Error::success();
  // Unset, the checkpoint's (whose blocks are checked below), or a float
  // format of the table.
  auto floatDtype = [](llvm::StringRef dtype) {
    std::optional<WeightFormat> format = formatOfDtype(dtype);
    return dtype.empty() || dtype == "checkpoint" ||
           (format && isFloatFormat(*format));
  };
  const CodegenPipelineOptions &pipeline = *options.pipeline;
  if (!target->blockWeights) {
    if (!floatDtype(pipeline.weightsDtype))
      return makeError(flag +
                       " stores weights as f32, bf16 or f16 so far: "
                       "--weights-dtype=" +
                       pipeline.weightsDtype.getValue() + " is CPU only");
    if (!floatDtype(pipeline.edgeDtype))
      return makeError(flag +
                       " stores weights as f32, bf16 or f16 so far: "
                       "--edge-dtype=" +
                       pipeline.edgeDtype.getValue() + " is CPU only");
    std::optional<WeightFormat> blocks = unit.weights.firstBlockDtype();
    if (blocks && (pipeline.weightsDtype.empty() ||
                   pipeline.weightsDtype == "checkpoint"))
      return makeError(flag + " stores weights as f32, bf16 or f16 so far: '" +
                       options.inputPath + "' stores matrices in " +
                       checkpointName(*blocks) +
                       ", which only the CPU reads (--weights-dtype=bf16 "
                       "widens them)");
  }
  if (!pipeline.computeDtype.getValue().empty() && !target->packsWeights)
    return makeError(flag + " chooses its own products: --compute-dtype is "
                            "for the CPU's GEMM kernels");
  if (!target->perWeightDtypes && !pipeline.weightsDtypeFor.getValue().empty())
    return makeError(flag + " takes one weights dtype so far: "
                            "--weights-dtype-for is CPU only");
  if (pipeline.loraSlots > 0 && !target->loraSlots)
    return makeError(flag + " has no run-time LoRA adapters so far: "
                            "--lora-slots is CPU only");
  if (pipeline.verify && !target->verifyEntry)
    return makeError(flag + " has no @verify so far: --speculative is CPU "
                            "only");
  if (!target->narrowKVCache && pipeline.kvDtype != "f32")
    return makeError(flag + " keeps an f32 KV cache so far: --kv-dtype=" +
                     pipeline.kvDtype + " is CPU only");
  ModuleOp module = *unit.module;
  if (!target->recurrentLayers && hasRecurrentLayers(module))
    return makeError(flag + " runs attention layers so far: '" +
                     options.inputPath +
                     "' has Gated DeltaNet (linear attention) layers, which "
                     "only the CPU runs");
  if (target->inputRoles.empty())
    return llvm::Error::success();
  for (auto function : module.getOps<func::FuncOp>())
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
      auto role =
          function.getArgAttrOfType<InputRoleAttr>(i, kInputArgAttrName);
      if (role && !llvm::is_contained(target->inputRoles, role.getValue()))
        return makeError(flag +
                         " takes models whose inputs are token ids, "
                         "token types, features or decoder tokens so far: '" +
                         unit.model.getFamily() + "' takes " +
                         stringifyInputRole(role.getValue()));
    }
  return llvm::Error::success();
}

/// Checks the options against each other and the input before any work.
/// Whether the model's positions may run past its maximum context: its
/// rotary embeddings scale with the sequence (dynamic NTK), as
/// transformers runs such a model at any length. Learned position tables
/// and fixed frequencies end at the maximum.
bool runsPastMaxContext(const CompilationUnit &unit) {
  bool dynamic = false;
  (*unit.module)->walk([&](RopeOp rope) {
    dynamic |= rope.getNtkFactor().has_value();
  });
  return dynamic;
}

/// The MPI processes a model runs as: its tensor-parallel ranks times its
/// pipeline stages.
int64_t processesOf(const CodegenPipelineOptions *pipeline) {
  return pipeline ? pipeline->ranks * pipeline->pipelineStages : 1;
}

/// --ranks and --pipeline-stages: a model split over MPI processes needs
/// MPI where tfmc was built and runs on the CPU.
llvm::Error checkRanks(const CompileOptions &options,
                       const CompilationUnit &unit) {
  int64_t ranks = options.pipeline ? options.pipeline->ranks : 1;
  int64_t stages = options.pipeline ? options.pipeline->pipelineStages : 1;
  if (ranks < 1)
    return makeError("--ranks must be at least 1, got " +
                     llvm::Twine(ranks));
  if (stages < 1)
    return makeError("--pipeline-stages must be at least 1, got " +
                     llvm::Twine(stages));
  if (stages == 1 && options.pipeline &&
      !options.pipeline->pipelineLayers.getValue().empty())
    return makeError("--pipeline-layers " +
                     options.pipeline->pipelineLayers.getValue() +
                     ": each pipeline stage's layers, for a model split into "
                     "stages (--pipeline-stages)");
  if (ranks == 1 && stages == 1)
    return llvm::Error::success();
  std::string split;
  if (ranks > 1)
    split = "--ranks " + std::to_string(ranks);
  if (stages > 1)
    split += (split.empty() ? "" : " ") + std::string("--pipeline-stages ") +
             std::to_string(stages);
  if (llvm::StringRef(TFM_MPI_IMPLEMENTATION).empty())
    return makeError(split + ": this tfmc was built without MPI (install "
                             "libopenmpi-dev and build it again)");
  const CodegenTarget &target = targetOf(*options.pipeline);
  if (!target.splitsOverRanks)
    return makeError(split +
                     ": a model split over ranks runs on the CPU (--target=" +
                     target.name + " runs on " + target.runsOn + ")");
  if ((*unit.module)->hasAttr(kDiffusionAttrName))
    return makeError(split + ": '" + options.inputPath +
                     "' is a Stable Diffusion pipeline, which runs in one "
                     "process (its UNet's attention is not split over ranks "
                     "yet)");
  if ((*unit.module)->hasAttr(kImageTokenAttrName))
    return makeError(split + ": '" + options.inputPath +
                     "' is a vision-language model, whose image rows are "
                     "not split over ranks yet (it runs in one process)");
  return llvm::Error::success();
}

/// --compute-dtype: bf16 or int8 with the weights it multiplies (bf16;
/// int8 per channel, whose kernels quantize the activations per row at
/// each call, or int8 blocks of 32, per block), which it sets where
/// --weights-dtype does not (int8-channel for int8), or f32 over float
/// weights (the block formats' kernels multiply int8 activations). Checked
/// before the weights' dtype is defaulted; `unit` says what a checkpoint
/// stores.
llvm::Error checkComputeDtype(const CodegenPipelineOptions &pipeline,
                              const CompilationUnit &unit) {
  llvm::StringRef compute = pipeline.computeDtype.getValue();
  if (compute.empty())
    return llvm::Error::success();
  if (compute != "f32" && compute != "bf16" && compute != "int8")
    return makeError("--compute-dtype: expected f32, bf16 or int8, got '" +
                     compute + "'");
  // Each weight dtype flag given, by name.
  std::pair<llvm::StringRef, llvm::StringRef> given[] = {
      {"--weights-dtype", pipeline.weightsDtype.getValue()},
      {"--edge-dtype", pipeline.edgeDtype.getValue()},
      {"--weights-dtype-for",
       llvm::StringRef(pipeline.weightsDtypeFor.getValue())
           .rsplit('=')
           .second}};
  for (auto [flag, dtype] : given) {
    if (dtype.empty())
      continue;
    bool int8Weights = dtype == "int8" || dtype == "int8-channel";
    if (compute != "f32" && dtype != compute &&
        !(compute == "int8" && int8Weights))
      return makeError("--compute-dtype=" + compute + " multiplies " +
                       (compute == "int8" ? "int8 or int8-channel" : compute) +
                       " weights; " + flag + "=" + dtype +
                       " stores them otherwise");
    std::optional<WeightFormat> format = formatOfDtype(dtype);
    if (compute == "f32" && format && !isFloatFormat(*format))
      return makeError("--compute-dtype=f32 keeps every product in f32; " +
                       flag + "=" + dtype +
                       " stores weights in blocks whose kernels multiply int8 "
                       "activations");
  }
  llvm::StringRef weights = pipeline.weightsDtype.getValue();
  std::optional<WeightFormat> blocks =
      unit.model ? unit.weights.firstBlockDtype() : std::nullopt;
  if (compute == "f32" && blocks &&
      (weights.empty() || weights == "checkpoint"))
    return makeError(llvm::Twine("--compute-dtype=f32 keeps every product "
                                 "in f32; the checkpoint stores matrices in ") +
                     checkpointName(*blocks) +
                     ", whose kernels multiply int8 activations "
                     "(--weights-dtype=bf16 widens them)");
  return llvm::Error::success();
}

llvm::Error checkOptions(const CompileOptions &options,
                         const CompilationUnit &unit) {
  bool linked = options.emit == EmitKind::Exe || isLibrary(options.emit);
  if (linked && !unit.model)
    return makeError(llvm::Twine(options.emit == EmitKind::Exe
                                     ? "an executable"
                                     : "a library") +
                     " needs a model: '" + options.inputPath +
                     "' has no tfm.model attribute (use --emit=obj)");
  static const char *const binaryEmitNames[] = {"obj", "exe", "lib",
                                                "staticlib", "cuda-emulator"};
  if (options.emit >= EmitKind::Obj && options.outputPath.empty())
    return makeError(llvm::Twine("--emit=") +
                     binaryEmitNames[int(options.emit) - int(EmitKind::Obj)] +
                     " needs an output file (-o)");
  std::string prefix = prefixOf(options);
  if (identifierFrom(prefix) != prefix)
    return makeError("--prefix must be a C identifier, got '" + prefix + "'");
  if (llvm::Error err = checkTarget(options, unit))
    return err;
  if (llvm::Error err = checkRanks(options, unit))
    return err;
  int64_t maxContext = options.pipeline ? options.pipeline->maxContext : 0;
  int64_t modelContext = unit.model ? unit.model.getMaxContext() : 0;
  if (maxContext < 0 ||
      (unit.model && maxContext > modelContext && !runsPastMaxContext(unit)))
    return makeError("--max-context must be between 1 and the model's "
                     "maximum context (" +
                     llvm::Twine(modelContext) + "), got " +
                     llvm::Twine(maxContext) +
                     " (only rope_scaling \"dynamic\" runs past it)");
  return llvm::Error::success();
}

} // namespace

LinkOptions mlir::tfm::locateRuntime(const char *argv0) {
  LinkOptions options;
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&locateRuntime));
  llvm::SmallString<256> prefix(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::SmallString<256> installedHeader(prefix);
  llvm::sys::path::append(installedHeader, "include", "tfm", "tfm_runtime.h");
  std::string libDir = TFM_RUNTIME_LIBRARY_DIR;
  options.runtimeIncludeDir = TFM_RUNTIME_INCLUDE_DIR;
  if (llvm::sys::fs::exists(installedHeader)) {
    libDir = (prefix + "/lib").str();
    options.runtimeIncludeDir = (prefix + "/include").str();
  }
  options.runtimeLibraryDir = libDir;
  options.runtimeLibrary = libDir + "/libtfmrt.a";
  options.runtimeMainLibrary = libDir + "/libtfmrt_main.a";
  options.runtimeMediaLibrary = libDir + "/libtfmrt_media.a";
  options.cudaEmulatorLibrary = libDir + "/libtfmcudaemu.a";
  options.runtimeMpiLibrary = libDir + "/libtfmrt_mpi.a";
  llvm::SmallVector<llvm::StringRef> mpiLibraries;
  llvm::StringRef(TFM_MPI_LIBRARIES).split(mpiLibraries, ';', -1, false);
  for (llvm::StringRef library : mpiLibraries)
    options.mpiLibraries.push_back(library.str());
  return options;
}

bool mlir::tfm::isTfmModuleFile(llvm::StringRef path) {
  return path.ends_with(".mlir");
}

EmitKind mlir::tfm::defaultEmitKind(llvm::StringRef inputPath,
                                   llvm::StringRef checkpointPath) {
  return !isTfmModuleFile(inputPath) || !checkpointPath.empty()
             ? EmitKind::Exe
             : EmitKind::Tfm;
}

llvm::Expected<CompilationUnit>
mlir::tfm::loadInput(MLIRContext &context, const CompileOptions &options) {
  CompilationUnit unit;
  if (!isTfmModuleFile(options.inputPath)) {
    if (!options.weightsPath.empty())
      return makeError("--checkpoint is for a .mlir model; '" +
                       options.inputPath + "' has its own");
    llvm::Expected<LoadedModel> loaded =
        loadModel(context, options.inputPath, options.tokenizerPath,
                  options.chatTemplatePath, options.diffusion,
                  options.loraAdapters, options.mmprojPath);
    if (!loaded)
      return loaded.takeError();
    for (const std::string &note : loaded->notes)
      llvm::WithColor::note(llvm::errs(), "tfmc") << note << "\n";
    unit.module = std::move(loaded->module);
    unit.model = (*unit.module)->getAttrOfType<ModelAttr>(kModelAttrName);
    unit.weights = std::move(loaded->weights);
    unit.tokenizer = std::move(loaded->tokenizer);
    return std::move(unit);
  }
  if (!options.mmprojPath.empty())
    return makeError("--mmproj is llama.cpp's image side of a GGUF text "
                     "model; '" +
                     options.inputPath + "' is a tfm module");
  std::string error;
  auto input = openInputFile(options.inputPath, &error);
  if (!input)
    return makeError(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  // Diagnostics go to the context's handler, which the caller installed.
  unit.module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!unit.module)
    return diagnosed();
  unit.model = (*unit.module)->getAttrOfType<ModelAttr>(kModelAttrName);
  if (!unit.model)
    return std::move(unit);
  if (options.weightsPath.empty())
    return makeError(options.inputPath +
                     ": a model module needs its weights (--checkpoint FILE)");
  if (!options.chatTemplatePath.empty()) {
    llvm::Expected<std::string> chatTemplate =
        readChatTemplateFile(options.chatTemplatePath);
    if (!chatTemplate)
      return chatTemplate.takeError();
    llvm::Expected<ModelAttr> model = withChatTemplate(
        unit.model, *chatTemplate, options.chatTemplatePath);
    if (!model)
      return model.takeError();
    unit.model = *model;
    (*unit.module)->setAttr(kModelAttrName, unit.model);
  }
  if (llvm::Error err = readWeightsOfModule(*unit.module, options.weightsPath,
                                            unit.weights))
    return std::move(err);
  StringRef tokenizer = options.tokenizerPath.empty()
                            ? unit.model.getTokenizer()
                            : StringRef(options.tokenizerPath);
  if (!tokenizer.empty()) {
    llvm::Expected<TokenizerVocab> vocab =
        readTokenizerAt(tokenizer, unit.model.getVocabSize());
    if (!vocab)
      return vocab.takeError();
    unit.tokenizer = std::move(*vocab);
  }
  return std::move(unit);
}

llvm::Error mlir::tfm::runPipelineStages(CompilationUnit &unit,
                                         const CompileOptions &options,
                                         PipelineStage first,
                                         PipelineStage last) {
  CodegenPipelineOptions pipeline;
  if (options.pipeline)
    pipeline.copyOptionValuesFrom(*options.pipeline);
  // Only causal models get a KV cache, once; a module that is not a model
  // is compiled as written.
  bool askedForCache = pipeline.kvCache;
  // After the tfm stage: whether it made one (a split model's partition
  // stage batches the cached entry points).
  bool cached = first == PipelineStage::Tfm
                    ? wantsKVCache(*unit.module)
                    : bool((*unit.module).lookupSymbol("prefill"));
  pipeline.kvCache = pipeline.kvCache && unit.model && cached;
  // A cache dtype for a model that gets no cache would be silently moot.
  if (first == PipelineStage::Tfm && pipeline.kvDtype != "f32" &&
      !pipeline.kvCache && unit.model)
    return makeError("--kv-dtype=" + pipeline.kvDtype + ": " +
                     (!askedForCache
                          ? "there is no KV cache (--no-kv-cache)"
                          : "this model has no KV cache (only decoders and "
                            "encoder-decoders do)"));
  if (first == PipelineStage::Tfm && pipeline.verify &&
      (!pipeline.kvCache || !unit.model))
    return makeError(std::string("--speculative: ") +
                     (!askedForCache
                          ? "there is no KV cache (--no-kv-cache)"
                          : "this model has no KV cache (only decoders do)"));
  if (pipeline.loraSlots < 0 || pipeline.loraSlots > TFM_LORA_MAX_SLOTS)
    return makeError("--lora-slots: expected 0 to " +
                     std::to_string(TFM_LORA_MAX_SLOTS) + ", got " +
                     std::to_string(pipeline.loraSlots));
  if (pipeline.loraSlots > 0 &&
      (pipeline.loraRank < 1 || pipeline.loraRank > TFM_LORA_MAX_RANK))
    return makeError("--lora-rank: expected 1 to " +
                     std::to_string(TFM_LORA_MAX_RANK) + ", got " +
                     std::to_string(pipeline.loraRank));
  if (pipeline.loraSlots == 0 && !pipeline.loraTargets.getValue().empty())
    return makeError("--lora-targets chooses what run-time adapters adapt: "
                     "give --lora-slots too");
  if (first == PipelineStage::Tfm && pipeline.loraSlots > 0 &&
      (!pipeline.kvCache || !unit.model))
    return makeError(std::string("--lora-slots: ") +
                     (!askedForCache
                          ? "run-time adapters need the KV cache's entry "
                            "points (--no-kv-cache)"
                          : "run-time adapters are for decoders so far"));
  if (pipeline.loraSlots > 0 && processesOf(&pipeline) > 1)
    return makeError("--lora-slots: a model split over ranks takes no "
                     "run-time adapters yet (" +
                     std::to_string(processesOf(&pipeline)) + " processes)");
  if (pipeline.verify && processesOf(&pipeline) > 1)
    return makeError("--speculative: a model split over ranks has no "
                     "@verify yet (" +
                     std::to_string(processesOf(&pipeline)) + " processes)");
  if (first == PipelineStage::Tfm)
    if (llvm::Error error = checkComputeDtype(pipeline, unit))
      return error;
  // Weights keep the checkpoint's dtype unless told otherwise; an f32
  // checkpoint's matrices become what the target stores them as (bf16 on
  // the GPU, codegen/Targets.cpp), or the products' dtype for bf16 or int8
  // products.
  if (pipeline.weightsDtype.empty() && unit.model &&
      (pipeline.computeDtype == "bf16" || pipeline.computeDtype == "int8"))
    pipeline.weightsDtype =
        pipeline.computeDtype == "int8" ? "int8-channel" : "bf16";
  if (pipeline.weightsDtype.empty() && unit.model) {
    if (unit.weights.hasNarrowMatrices())
      pipeline.weightsDtype = "checkpoint";
    else
      pipeline.weightsDtype = targetOf(pipeline).f32CheckpointDtype.str();
  }
  // Formats no kernel reads are requantized, which users of such a file
  // (llama.cpp's Q5_K_M, Q3_K_M, IQ4_XS) should know.
  if (first == PipelineStage::Tfm && unit.model &&
      pipeline.weightsDtype == "checkpoint") {
    std::string requantized = describeRequantized(unit.weights);
    if (!requantized.empty())
      llvm::WithColor::note(llvm::errs(), "tfmc")
          << llvm::sys::path::filename(options.inputPath)
          << ": requantized " << requantized
          << ": no kernel reads their formats as stored (--weights-dtype "
             "picks another dtype)\n";
  }
  if (!unit.model && first == PipelineStage::Tfm)
    first = PipelineStage::Linalg;
  if (first > last)
    return llvm::Error::success();
  pipeline.prefix = isLibrary(options.emit) ? prefixOf(options) : "";
  // The emulator takes the kernels before PTX and the host code.
  pipeline.cudaKernelsOnly = options.emit == EmitKind::CudaEmulator;
  PassManager pm(unit.module->getContext());
  if (options.configurePassManager &&
      failed(options.configurePassManager(pm)))
    return diagnosed();
  if (options.timing)
    pm.enableTiming(*options.timing);
  buildCodegenPipeline(pm, pipeline, first, last);
  if (failed(pm.run(*unit.module)))
    return diagnosed();
  return llvm::Error::success();
}

llvm::Error mlir::tfm::translateToLLVMIR(CompilationUnit &unit,
                                         const CompileOptions &options) {
  std::optional<TimingScope> timing;
  if (options.timing)
    timing = options.timing->nest("Translate and optimize LLVM IR");
  unit.llvmContext = std::make_unique<llvm::LLVMContext>();
  unit.llvmModule =
      translateAndOptimize(*unit.module, *unit.llvmContext, options.target);
  if (!unit.llvmModule)
    return diagnosed();
  // The generated functions are reached through the model description
  // only: a library exports nothing else. (Internal functions, such as
  // outlined loop bodies, cannot carry a visibility.)
  if (isLibrary(options.emit))
    for (llvm::Function &f : *unit.llvmModule)
      if (!f.isDeclaration() && !f.hasLocalLinkage())
        f.setVisibility(llvm::GlobalValue::HiddenVisibility);
  return llvm::Error::success();
}

llvm::Error mlir::tfm::emitMachineCode(CompilationUnit &unit,
                                       const CompileOptions &options,
                                       bool assembly, llvm::StringRef path) {
  std::optional<TimingScope> timing;
  if (options.timing)
    timing = options.timing->nest("Emit object code");
  std::string error =
      emitNativeCode(*unit.llvmModule, options.target, assembly, path);
  return error.empty() ? llvm::Error::success() : makeError(error);
}

llvm::Expected<ModelDescription>
mlir::tfm::modelDescription(const CompilationUnit &unit,
                            const CompileOptions &options) {
  ModelAttr model = unit.model;
  ModelDescription description;
  description.name = modelNameOf(options);
  description.source = options.inputPath;
  description.cudaTarget =
      options.pipeline && targetOf(*options.pipeline).ptxKernels;
  description.hiddenSize = model.getHiddenSize();
  description.numLayers = model.getNumLayers();
  description.numHeads = model.getNumHeads();
  description.numKVHeads = model.getNumKvHeads();
  if (auto scale =
          (*unit.module)->getAttrOfType<FloatAttr>(kLogitScaleAttrName))
    description.logitScale = scale.getValueAsDouble();
  if (auto bias = (*unit.module)->getAttrOfType<FloatAttr>(kLogitBiasAttrName))
    description.logitBias = bias.getValueAsDouble();
  if (auto pad =
          (*unit.module)->getAttrOfType<IntegerAttr>(kTextPadTokenAttrName))
    description.textPadToken = pad.getInt();
  if (auto token =
          (*unit.module)->getAttrOfType<IntegerAttr>(kImageTokenAttrName))
    description.imageToken = token.getInt();
  description.imageRowsBidirectional =
      (*unit.module)->hasAttr(kImageRowsBidirectionalAttrName);
  if (auto tokens =
          (*unit.module)
              ->getAttrOfType<DenseI64ArrayAttr>(kImageTileTokensAttrName))
    description.imageTileTokens.assign(tokens.asArrayRef().begin(),
                                       tokens.asArrayRef().end());
  // Checked by the dialect (TfmAttrs.cpp): every field is there.
  if (auto diffusion =
          (*unit.module)->getAttrOfType<DictionaryAttr>(kDiffusionAttrName)) {
    ModelDescription::Diffusion d;
    for (llvm::StringRef key : kDiffusionIntegerFields)
      d.integers.push_back(diffusion.getAs<IntegerAttr>(key).getInt());
    d.scalingFactor =
        diffusion.getAs<FloatAttr>("scaling_factor").getValueAsDouble();
    d.schedulerConfig =
        diffusion.getAs<StringAttr>("scheduler_config").str();
    description.diffusion = std::move(d);
  }
  // Made by tfm-lora-slots, which writes every field.
  if (auto lora =
          (*unit.module)->getAttrOfType<DictionaryAttr>(kLoraAttrName)) {
    ModelDescription::Lora slots;
    slots.slots = lora.getAs<IntegerAttr>("slots").getInt();
    slots.rank = lora.getAs<IntegerAttr>("rank").getInt();
    llvm::ArrayRef<int64_t> features =
        lora.getAs<DenseI64ArrayAttr>("features").asArrayRef();
    for (auto [i, name] : llvm::enumerate(lora.getAs<ArrayAttr>("targets")))
      slots.targets.push_back(
          {cast<StringAttr>(name).str(), features[2 * i], features[2 * i + 1]});
    description.lora = std::move(slots);
  }
  description.vocabSize = model.getVocabSize();
  // --max-context past the model's maximum (dynamic NTK scaling) is the
  // context the compiled model takes.
  description.maxContext =
      std::max<int64_t>(model.getMaxContext(),
                        options.pipeline ? options.pipeline->maxContext : 0);
  description.bosToken = model.getBosToken();
  description.eosToken = model.getEosToken();
  if (auto stops = (*unit.module)->getAttrOfType<DenseI32ArrayAttr>(
          kStopTokensAttrName))
    for (int32_t token : stops.asArrayRef())
      if (token >= 0 && token < description.vocabSize)
        description.stopTokens.push_back(token);
  description.addBos = model.getAddBos();
  description.family = model.getFamily().str();
  description.ranks = processesOf(options.pipeline);
  if (options.pipeline)
    description.pipelineStages = options.pipeline->pipelineStages;
  description.chatTemplate = model.getChatTemplate().str();
  if (ArrayAttr labels = model.getLabels())
    for (Attribute label : labels)
      description.labels.push_back(cast<StringAttr>(label).str());
  if (ImagePreprocessingAttr image = model.getImage()) {
    tfm_image_preprocessing p = {};
    p.resize_height = image.getResizeHeight();
    p.resize_width = image.getResizeWidth();
    p.shortest_edge = image.getShortestEdge();
    p.resample = image.getResample();
    p.crop_height = image.getCropHeight();
    p.crop_width = image.getCropWidth();
    p.rescale = image.getRescale().getValueAsDouble();
    p.normalize = image.getNormalize();
    p.longest_edge = image.getLongestEdge();
    p.split_tiles = image.getSplitTiles();
    for (int c = 0; c < 3; ++c) {
      p.mean[c] = image.getMean()[c];
      p.std[c] = image.getStd()[c];
    }
    description.imagePreprocessing = p;
    if (DenseI64ArrayAttr pinpoints = image.getGridPinpoints())
      description.imageGridPinpoints.assign(pinpoints.asArrayRef().begin(),
                                            pinpoints.asArrayRef().end());
  }
  if (AudioPreprocessingAttr audio = model.getAudio())
    description.audioPreprocessing = tfm_audio_preprocessing{
        audio.getMelBins(),
        audio.getSamplingRate(),
        audio.getNFft(),
        audio.getHopLength(),
        audio.getSamples(),
        audio.getKaldi(),
        audio.getNormalize(),
        audio.getWindowLength(),
        audio.getFrames(),
        audio.getMean() ? float(audio.getMean().getValueAsDouble()) : 0.0f,
        audio.getStd() ? float(audio.getStd().getValueAsDouble()) : 0.0f};
  if (WaveformAttr w = model.getWaveform())
    description.waveform = tfm_waveform_input{
        w.getSamplingRate(), w.getMinSamples(), w.getFrameSamples(),
        w.getBlank(),        w.getWordDelimiter(), w.getCleanUp(),
        w.getLowercase()};
  if (GenerationAttr generation = model.getGeneration()) {
    tfm_generation_defaults g = {};
    g.num_beams = generation.getNumBeams();
    g.max_new_tokens = generation.getMaxNewTokens();
    g.min_new_tokens = generation.getMinNewTokens();
    g.no_repeat_ngram_size = generation.getNoRepeatNgramSize();
    g.forced_eos = generation.getForcedEos();
    g.forced_bos = generation.getForcedBos();
    g.length_penalty = generation.getLengthPenalty()
                           ? float(generation.getLengthPenalty().getValueAsDouble())
                           : 1.0f;
    g.early_stopping = generation.getEarlyStopping();
    g.no_timestamps = generation.getNoTimestamps();
    g.max_initial_timestamp = generation.getMaxInitialTimestamp();
    g.start_of_previous = generation.getStartOfPrevious();
    g.transcribe = generation.getTranscribe();
    g.translate = generation.getTranslate();
    g.median_filter_width = generation.getMedianFilterWidth();
    auto tokens = [](DenseI32ArrayAttr list) {
      return list ? std::vector<int32_t>(list.asArrayRef().begin(),
                                         list.asArrayRef().end())
                  : std::vector<int32_t>();
    };
    description.suppressedTokens = tokens(generation.getSuppressed());
    description.promptTokens = tokens(generation.getPrompt());
    description.beginSuppressedTokens = tokens(generation.getBeginSuppressed());
    description.badWordTokens = tokens(generation.getBadWords());
    description.badWordLengths = tokens(generation.getBadWordLengths());
    description.languageTokens = tokens(generation.getLanguages());
    description.generation = g;
  }
  if (llvm::Error err = describeEntryPoints(*unit.module, description))
    return std::move(err);
  if (unit.tokenizer)
    description.tokenizerBlob = serializeTokenizer(*unit.tokenizer);
  return description;
}

/// The unit's machine code in a new temporary object file named after
/// `prefix` (removed again when emitting fails); the caller removes it
/// once it is linked.
static llvm::Expected<std::string>
emitTemporaryObject(CompilationUnit &unit, const CompileOptions &options,
                    llvm::StringRef prefix) {
  llvm::SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile(prefix, "o", objectPath))
    return makeError("cannot create a temporary object file: " +
                     ec.message());
  if (options.progress)
    options.progress->stage("generating machine code");
  if (llvm::Error err = emitMachineCode(unit, options, /*assembly=*/false,
                                        objectPath)) {
    llvm::sys::fs::remove(objectPath);
    return std::move(err);
  }
  return objectPath.str().str();
}

llvm::Error
mlir::tfm::linkExecutableOrLibrary(CompilationUnit &unit,
                                   const CompileOptions &options,
                                   const ModelDescription &description) {
  llvm::Expected<std::string> objectPath =
      emitTemporaryObject(unit, options, "tfmc-model");
  if (!objectPath)
    return objectPath.takeError();
  LinkOptions link = options.runtime;
  link.kind = options.emit == EmitKind::Lib ? OutputKind::SharedLibrary
              : options.emit == EmitKind::StaticLib
                  ? OutputKind::StaticLibrary
                  : OutputKind::Executable;
  link.outputPath = options.outputPath;
  link.externalWeights = options.externalWeights;
  link.prefix = prefixOf(options);
  llvm::SmallString<256> headerPath(
      llvm::sys::path::parent_path(options.outputPath));
  llvm::sys::path::append(headerPath, description.name + ".h");
  link.headerPath = headerPath.str().str();
  const WeightStore &weights = unit.weights;
  auto lookup = [&](llvm::StringRef name) -> std::optional<WeightRows> {
    const WeightTensor *tensor = weights.lookup(name);
    if (!tensor)
      return std::nullopt;
    return WeightRows{tensor->rows(),
                      tensor->cols(),
                      [tensor](int64_t begin, int64_t count, float *out) {
                        tensor->readRows(begin, count, out);
                      },
                      [tensor](int64_t begin, int64_t end) {
                        if (begin == 0 && end == tensor->rows())
                          tensor->releasePages();
                        else
                          tensor->releaseRows(begin, end);
                      },
                      checkpointName(tensor->dtype()),
                      [tensor](int64_t begin, int64_t count, uint8_t *out) {
                        return tensor->readStoredRows(begin, count, out);
                      },
                      checkpointBlockElements(tensor->dtype()),
                      checkpointBlockBytes(tensor->dtype())};
  };
  if (options.progress) {
    options.progress->stage("writing weights and linking");
    link.weightProgress = [&options](uint64_t done, uint64_t total) {
      options.progress->advance(done, total);
    };
  }
  llvm::Error linked = [&] {
    std::optional<TimingScope> timing;
    if (options.timing)
      timing = options.timing->nest("Package weights and link");
    return linkModel(*unit.module, lookup, description, *objectPath, link);
  }();
  llvm::sys::fs::remove(*objectPath);
  return linked;
}

llvm::Error mlir::tfm::emitCudaEmulator(CompilationUnit &unit,
                                        const CompileOptions &options) {
  if (options.progress)
    options.progress->stage("compiling the kernels for the host");
  unit.llvmContext = std::make_unique<llvm::LLVMContext>();
  llvm::Expected<std::unique_ptr<llvm::Module>> kernels =
      translateKernelsForHost(*unit.module, *unit.llvmContext, options.target);
  if (!kernels)
    return kernels.takeError();
  unit.llvmModule = std::move(*kernels);
  llvm::Expected<std::string> objectPath =
      emitTemporaryObject(unit, options, "tfmc-kernels");
  if (!objectPath)
    return objectPath.takeError();
  LinkOptions link = options.runtime;
  link.outputPath = options.outputPath;
  llvm::Error linked = linkCudaEmulator(*objectPath, link);
  llvm::sys::fs::remove(*objectPath);
  return linked;
}

llvm::Error mlir::tfm::compile(MLIRContext &context,
                               const CompileOptions &options) {
  auto stage = [&](llvm::StringRef name) {
    if (options.progress)
      options.progress->stage(name);
  };
  stage("reading the model");
  llvm::Expected<CompilationUnit> loaded = loadInput(context, options);
  if (!loaded)
    return loaded.takeError();
  CompilationUnit &unit = *loaded;
  if (llvm::Error err = checkOptions(options, unit))
    return err;
  auto printModule = [&] {
    return writeText(options,
                     [&](llvm::raw_ostream &os) { unit.module->print(os); });
  };
  using Stage = PipelineStage;
  stage("running the tfm passes");
  if (llvm::Error err =
          runPipelineStages(unit, options, Stage::Tfm, Stage::Tfm))
    return err;
  if (options.emit == EmitKind::Tfm)
    return printModule();
  if (llvm::Error err = runPipelineStages(unit, options, Stage::Partition,
                                          Stage::Partition))
    return err;
  // Read before lowering: the tfm-level @prefill says what cache it takes.
  std::optional<ModelDescription> description;
  if (unit.model) {
    llvm::Expected<ModelDescription> described = modelDescription(unit, options);
    if (!described)
      return described.takeError();
    description = std::move(*described);
  }
  stage("lowering to linalg");
  if (llvm::Error err =
          runPipelineStages(unit, options, Stage::Linalg, Stage::Linalg))
    return err;
  if (options.emit == EmitKind::Linalg)
    return printModule();
  // The weight layout says what a decode step reads.
  if (auto bytes = (*unit.module)->getAttrOfType<IntegerAttr>(
          kDecodeWeightBytesAttrName);
      bytes && description)
    description->decodeWeightBytes = bytes.getInt();
  stage("lowering to LLVM");
  if (llvm::Error err =
          runPipelineStages(unit, options, Stage::LLVM, Stage::LLVM))
    return err;
  if (options.emit == EmitKind::LLVMMLIR)
    return printModule();
  if (options.emit == EmitKind::CudaEmulator)
    return emitCudaEmulator(unit, options);
  if (options.emit == EmitKind::Ptx)
    return writeText(options, [&](llvm::raw_ostream &os) {
      printKernelAssembly(*unit.module, os);
    });
  stage("optimizing LLVM IR");
  if (llvm::Error err = translateToLLVMIR(unit, options))
    return err;
  if (options.emit == EmitKind::LLVMIR)
    return writeText(options, [&](llvm::raw_ostream &os) {
      unit.llvmModule->print(os, nullptr);
    });
  if (options.emit == EmitKind::Asm || options.emit == EmitKind::Obj)
    return emitMachineCode(
        unit, options, options.emit == EmitKind::Asm,
        options.outputPath.empty() ? "-" : options.outputPath);
  return linkExecutableOrLibrary(unit, options, *description);
}

void mlir::tfm::registerCompilerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<TfmDialect>();
  registerLLVMTranslations(registry);
  registerCodegenExtensions(registry);
}
