//===- tfmc.cpp - the tfmc compiler driver ------------------------------===//
//
// `tfmc MODEL -o NAME` compiles a model (a Hugging Face directory, a llama2.c
// .bin, or a tfm module in .mlir form) into a native executable; `--emit=`
// stops at an earlier stage. Option parsing only: the stages are the
// compiler library's (compiler/Compiler.h). Honours MLIR's own options
// (--mlir-print-ir-after-all, --mlir-timing, ...); --help lists tfmc's
// options and those, --help-hidden everything LLVM registers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "compiler/PipelineSwitches.h"
#include "frontend/ModelLoader.h"
#include "tools/common/DebugOption.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace cl = llvm::cl;
using tfm::EmitKind;

namespace {

cl::OptionCategory outputCategory("Compilation (model in, what comes out, target)");
cl::OptionCategory passCategory(
    "Passes (each --no-X sets X=false in tfm-codegen-pipeline)");
cl::OptionCategory mlirCategory("MLIR (IR printing, timing, diagnostics)");

cl::opt<std::string> inputPath(
    cl::Positional,
    cl::desc("<model: Hugging Face directory, GGUF file, llama2.c .bin, or .mlir>"),
    cl::Required, cl::cat(outputCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                cl::value_desc("path"), cl::cat(outputCategory));
cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce (default: exe for models, tfm for a "
                    ".mlir without --checkpoint)"),
    cl::values(clEnumValN(EmitKind::Tfm, "tfm", "tfm dialect IR"),
               clEnumValN(EmitKind::Linalg, "linalg", "linalg on tensors"),
               clEnumValN(EmitKind::LLVMMLIR, "llvm-mlir", "the LLVM dialect"),
               clEnumValN(EmitKind::LLVMIR, "llvm-ir", "optimized LLVM IR"),
               clEnumValN(EmitKind::Asm, "asm", "assembly"),
               clEnumValN(EmitKind::Ptx, "ptx",
                          "the GPU kernels' PTX (--target=cuda)"),
               clEnumValN(EmitKind::Obj, "obj", "an object file"),
               clEnumValN(EmitKind::Exe, "exe", "a native executable"),
               clEnumValN(EmitKind::Lib, "lib",
                          "a shared library libNAME.so + NAME.h"),
               clEnumValN(EmitKind::StaticLib, "staticlib",
                          "a static library libNAME.a + NAME.h"),
               clEnumValN(EmitKind::CudaEmulator, "cuda-emulator",
                          "a stand-in for libcuda.so.1 that runs the "
                          "model's GPU kernels on the CPU (--target=cuda; "
                          "run a CUDA build with TFM_CUDA_DRIVER=it)")),
    cl::cat(outputCategory));
cl::opt<std::string> symbolPrefix(
    "prefix",
    cl::desc("C identifier prefixing a library's symbols (default: NAME of "
             "libNAME)"),
    cl::value_desc("identifier"), cl::cat(outputCategory));
cl::opt<std::string> tokenizerPath(
    "tokenizer",
    cl::desc("Tokenizer (tokenizer.bin, tokenizer.model, tokenizer.json) when "
             "it is not beside the model"),
    cl::value_desc("path"), cl::cat(outputCategory));
cl::opt<std::string> chatTemplatePath(
    "chat-template",
    cl::desc("Chat template (Jinja) the model carries for tfm-serve's "
             "/v1/chat/completions, instead of its tokenizer_config.json's"),
    cl::value_desc("file"), cl::cat(outputCategory));
cl::list<std::string> loraAdapters(
    "lora",
    cl::desc("A PEFT LoRA adapter folder merged into a Hugging Face "
             "decoder's weights (W + scale * alpha/r * B*A, as PEFT's "
             "merge_and_unload), or llama.cpp's GGUF LoRA file into a GGUF "
             "model's; DIR:SCALE scales its update (default 1). May be "
             "given more than once"),
    cl::value_desc("dir[:scale]"), cl::cat(outputCategory));
cl::opt<std::string> mmprojPath(
    "mmproj",
    cl::desc("llama.cpp's mmproj file: the image side (CLIP tower and "
             "projector) of a vision-language GGUF model, LLaVA 1.5's"),
    cl::value_desc("file.gguf"), cl::cat(outputCategory));
cl::opt<std::string> imageSize(
    "image-size",
    cl::desc("A diffusion pipeline's image size, WIDTHxHEIGHT pixels "
             "(default: its UNet's sample_size times 8)"),
    cl::value_desc("WxH"), cl::cat(outputCategory));
cl::opt<std::string> configFolder(
    "config-folder",
    cl::desc("A single-file Stable Diffusion checkpoint's diffusers folder: "
             "its model_index.json, configs and tokenizer (weights there "
             "are not read)"),
    cl::value_desc("dir"), cl::cat(outputCategory));
cl::opt<std::string> checkpointPath(
    "checkpoint",
    cl::desc("Weights of a .mlir model (.safetensors, its index.json, or "
             "their folder)"),
    cl::value_desc("path"), cl::cat(outputCategory));
enum class WeightsMode { Carried, External };
cl::opt<WeightsMode> weightsMode(
    "weights", cl::desc("Where the weights go"),
    cl::values(clEnumValN(WeightsMode::Carried, "embedded",
                          "in the executable or library (default)"),
               clEnumValN(WeightsMode::External, "external",
                          "in <output>.weights, mapped at run time")),
    cl::init(WeightsMode::Carried), cl::cat(outputCategory));
cl::opt<std::string> mcpu("mcpu",
                          cl::desc("Target CPU (default: the compiling "
                                   "machine's)"),
                          cl::init("native"), cl::cat(outputCategory));
cl::opt<std::string> target(
    "target",
    cl::desc("What the model runs on: cpu (default), or cuda (NVIDIA GPUs: "
             "PTX kernels loaded through the CUDA driver at run time)"),
    cl::init("cpu"), cl::value_desc("cpu|cuda"), cl::cat(outputCategory));
cl::opt<std::string> cudaArch(
    "cuda-arch",
    cl::desc("GPU architecture of the PTX (--target=cuda; default sm_80, "
             "which newer GPUs run too)"),
    cl::init("sm_80"), cl::value_desc("sm_XY"), cl::cat(outputCategory));
cl::opt<int64_t> ranks(
    "ranks",
    cl::desc("Processes the model runs as (MPI ranks: mpirun -np N ./model), "
             "each holding about 1/N of the weights: attention split by "
             "heads, the MLP by its features (default 1)"),
    cl::init(1), cl::value_desc("N"), cl::cat(outputCategory));
cl::opt<int64_t> pipelineStages(
    "pipeline-stages",
    cl::desc("Processes a decoder's layers are split over in P contiguous "
             "stages (MPI ranks: mpirun -np P ./model), each holding its "
             "layers' weights and cache and sending its rows to the next "
             "(default 1)"),
    cl::init(1), cl::value_desc("P"), cl::cat(outputCategory));
cl::opt<std::string> pipelineLayers(
    "pipeline-layers",
    cl::desc("Each pipeline stage's layers, first to last, as vLLM's "
             "VLLM_PP_LAYER_PARTITION gives them (--pipeline-stages 2 "
             "--pipeline-layers 8,4; default: the split whose stages' "
             "weights are most even, the LM head counted on the last)"),
    cl::init(""), cl::value_desc("L1,L2,..."), cl::cat(outputCategory));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"),
                           cl::Prefix, cl::init(3), cl::cat(outputCategory));
cl::opt<int64_t> maxContext(
    "max-context",
    cl::desc("KV cache capacity in positions (default: the model's maximum "
             "context)"),
    cl::init(0), cl::cat(passCategory));

cl::opt<std::string> weightsDtype(
    "weights-dtype",
    cl::desc("Storage of the weight matrices: f32, bf16, f16, int8 (blocks "
             "of 32, 8.5 bits), int8-channel (a scale per row, read as int8 "
             "blocks; its products quantize activations per row), int4 (4.5 "
             "bits) or int4-min (with a minimum per block, 5 bits) (default: "
             "the checkpoint's, each weight's "
             "own, but bf16 for an f32 checkpoint on --target=cuda; Q4_K, "
             "Q5_K, Q6_K and MXFP4 keep their blocks, formats no kernel "
             "reads become int8)"),
    cl::value_desc("dtype"), cl::cat(passCategory));
cl::opt<std::string> computeDtype(
    "compute-dtype",
    cl::desc("What the GEMMs multiply in: bf16 (weights stored as bf16, "
             "activations rounded to bf16 where the CPU's AVX512-BF16 dot "
             "product outruns widening, as on AMD's Zen 4 and 5; about twice "
             "the f32 rate), int8 (weights stored int8 per channel, the "
             "activations quantized per row at each call and multiplied by "
             "AVX-512 VNNI's integer dot product where the CPU has it: ONNX "
             "Runtime's dynamic quantization; --weights-dtype=int8 keeps a "
             "scale per block of 32 for both, finer and slower) or f32 "
             "(bf16 and f16 weights widened, "
             "activations never rounded, so that a sequence's outputs agree "
             "across batch sizes to f32's rounding, not bf16's) (default: "
             "bf16 where the weights are bf16, else f32)"),
    cl::value_desc("dtype"), cl::cat(passCategory));
cl::opt<std::string> kvDtype(
    "kv-dtype",
    cl::desc("Storage of the KV cache: f32 (default), bf16 or f16 (half "
             "the bytes and of attention's reads), or int8 (each position's "
             "keys and values of a KV head as int8 codes with an f32 scale: "
             "a quarter)"),
    cl::init("f32"), cl::value_desc("dtype"), cl::cat(passCategory));
cl::opt<bool> speculative(
    "speculative",
    cl::desc("Also derive @verify (every position's logits of tokens "
             "written to the KV cache at once), which speculative decoding "
             "checks drafted tokens with (the executable's --lookup-ngram); "
             "decoders whose cache can drop positions only"),
    cl::init(false), cl::cat(passCategory));
cl::opt<int64_t> loraSlots(
    "lora-slots",
    cl::desc("Slots for LoRA adapters loaded at run time (the executable's "
             "--lora, tfm_lora_load, tfm-serve's --lora): each adapted "
             "projection adds the update of the adapter its request runs "
             "with, so that requests with different adapters share a batch "
             "(decoders, CPU; default 0: none)"),
    cl::init(0), cl::value_desc("n"), cl::cat(passCategory));
cl::opt<int64_t> loraRank(
    "lora-rank",
    cl::desc("The largest rank of an adapter a slot takes (default 16)"),
    cl::init(16), cl::value_desc("r"), cl::cat(passCategory));
cl::opt<std::string> loraTargets(
    "lora-targets",
    cl::desc("Modules run-time adapters may adapt, comma-separated "
             "(q_proj,v_proj; default: every projection of the layers, "
             "PEFT's all-linear)"),
    cl::value_desc("names"), cl::cat(passCategory));
cl::opt<std::string> edgeDtype(
    "edge-dtype",
    cl::desc("Storage of embedding tables and the LM head (default: int8 "
             "for int4 and int4-min, else --weights-dtype)"),
    cl::value_desc("dtype"), cl::cat(passCategory));
cl::opt<bool> quiet("q", cl::desc("No progress on stderr (a compile that "
                                   "takes more than a few seconds shows it)"),
                    cl::cat(outputCategory));
cl::opt<double> progressAfter(
    "progress-after",
    cl::desc("Seconds into a compile before progress shows (default 2)"),
    cl::init(2.0), cl::Hidden, cl::cat(outputCategory));
cl::opt<std::string> weightsDtypeFor(
    "weights-dtype-for",
    cl::desc("REGEX=DTYPE: weights whose names match take DTYPE (e.g. "
             "--weights-dtype=int4 --weights-dtype-for='v_proj|down_proj=int8', "
             "as llama.cpp's Q4_K_M keeps those at more bits)"),
    cl::value_desc("regex=dtype"), cl::cat(passCategory));
cl::opt<std::string> keepWeights(
    "keep-weights", cl::desc("Weights whose names match this regex stay f32"),
    cl::value_desc("regex"), cl::cat(passCategory));

/// MLIR's and our debug options join tfmc's in --help; everything else LLVM
/// registers (other targets' codegen flags) goes behind --help-hidden
/// (cl::HideUnrelatedOptions would hide it from --help-hidden too).
void groupHelpCategories() {
  for (auto &[name, option] : cl::getRegisteredOptions()) {
    if (name.starts_with("mlir-") || name == "tfm-debug-only")
      option->addCategory(mlirCategory);
    bool ours = llvm::any_of(option->Categories, [](cl::OptionCategory *c) {
      return c == &outputCategory || c == &passCategory || c == &mlirCategory;
    });
    if (!ours && option->getOptionHiddenFlag() == cl::NotHidden)
      option->setHiddenFlag(cl::Hidden);
  }
}

int fail(const llvm::Twine &message) {
  llvm::errs() << "tfmc: error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  tfm::registerDebugOnlyOption();
  tfm::PipelineSwitches passSwitches(passCategory);
  groupHelpCategories();
  // The families each kind reads, from the frontend's tables.
  std::string models = tfm::supportedModelsSummary();
  cl::extrahelp modelsHelp(models);
  cl::ParseCommandLineOptions(argc, argv, "tfmc: transformer model compiler\n");

  DialectRegistry registry;
  tfm::registerCompilerDialects(registry);
  MLIRContext context(registry);
  // Users read these diagnostics; the generic op dump adds only noise.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  tfm::CodegenPipelineOptions pipeline;
  pipeline.maxContext = maxContext;
  pipeline.kvDtype = kvDtype;
  pipeline.verify = speculative;
  pipeline.loraSlots = loraSlots;
  pipeline.loraRank = loraRank;
  pipeline.loraTargets = loraTargets;
  pipeline.weightsDtype = weightsDtype;
  pipeline.computeDtype = computeDtype;
  pipeline.edgeDtype = edgeDtype;
  pipeline.keepWeights = keepWeights;
  pipeline.weightsDtypeFor = weightsDtypeFor;
  pipeline.target = target;
  pipeline.cudaArch = cudaArch;
  pipeline.ranks = ranks;
  pipeline.pipelineStages = pipelineStages;
  pipeline.pipelineLayers = pipelineLayers;
  passSwitches.apply(pipeline);

  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  tfm::CompileOptions options;
  options.inputPath = inputPath;
  options.tokenizerPath = tokenizerPath;
  options.chatTemplatePath = chatTemplatePath;
  options.mmprojPath = mmprojPath;
  if (imageSize.getNumOccurrences()) {
    // WIDTHxHEIGHT, as sd.cpp's -W and -H and users' "512x768".
    auto [width, height] = llvm::StringRef(imageSize).split('x');
    if (width.getAsInteger(10, options.diffusion.width) ||
        height.getAsInteger(10, options.diffusion.height) ||
        options.diffusion.width <= 0 || options.diffusion.height <= 0)
      return fail("--image-size expects WIDTHxHEIGHT in pixels (512x512), "
                  "got '" + imageSize + "'");
  }
  options.diffusion.configFolder = configFolder;
  for (const std::string &argument : loraAdapters) {
    llvm::Expected<tfm::LoraAdapterSpec> adapter =
        tfm::parseLoraArgument(argument);
    if (!adapter)
      return fail(llvm::toString(adapter.takeError()));
    options.loraAdapters.push_back(std::move(*adapter));
  }
  options.weightsPath = checkpointPath;
  options.emit = emitKind.getNumOccurrences()
                     ? emitKind.getValue()
                     : tfm::defaultEmitKind(inputPath, checkpointPath);
  options.outputPath = outputPath;
  options.prefix = symbolPrefix;
  options.externalWeights = weightsMode == WeightsMode::External;
  options.pipeline = &pipeline;
  options.target.cpu = mcpu;
  options.target.optLevel = std::min(optLevel.getValue(), 3u);
  options.runtime = tfm::locateRuntime(argv[0]);
  options.configurePassManager = [](PassManager &pm) {
    return applyPassManagerCLOptions(pm);
  };
  options.timing = &timing;
  tfm::Progress progress(!quiet, progressAfter);
  options.progress = &progress;

  int status = 0;
  llvm::handleAllErrors(
      tfm::compile(context, options), [&](const tfm::DiagnosedError &) {
        status = 1;
      },
      [&](const llvm::ErrorInfoBase &error) { status = fail(error.message()); });
  return status;
}
