//===- CudaPipeline.cpp - linalg to GPU kernels and their host code ------===//
//
// --target=cuda: every linalg op becomes a parallel loop, tiled into blocks
// of threads and outlined as a kernel (gpu dialect -> NVVM -> PTX through
// LLVM's NVPTX backend, no CUDA toolkit); buffers live in device memory and
// the host code only sizes them and launches the kernels, through the
// `mgpu*` functions the runtime implements over the CUDA driver API
// (runtime/cuda/cuda_driver.c). The PTX is embedded in the object as a string
// and JIT-compiled by the driver when the model is loaded.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaPipeline.h"
#include "codegen/cuda/Passes.h"
#include "codegen/host/HostPipeline.h"
#include "codegen/linalg/BufferizationPipeline.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tfm;

int mlir::tfm::cudaArchNumber(llvm::StringRef cudaArch) {
  int number = 0;
  if (!cudaArch.consume_front("sm_") ||
      cudaArch.take_while(llvm::isDigit).getAsInteger(10, number))
    return 0;
  return number;
}

void mlir::tfm::buildLinalgToCudaPipeline(OpPassManager &pm,
                                          const LinalgToCudaOptions &options) {
  // Bufferization as on the CPU (buildLinalgToLLVMPipeline says why),
  // with no fill shared between products (each would be copied).
  pm.addNestedPass<func::FuncOp>(createFillPerUsePass());
  // bf16 and f16 weights stay narrow in device memory: products read them
  // as stored instead of through an f32 copy made at every call.
  pm.addNestedPass<func::FuncOp>(createWidenInMatmulsPass());
  // Every generic left is a launch: elementwise chains as one kernel.
  if (options.fuseElementwise)
    pm.addNestedPass<func::FuncOp>(createFuseElementwiseForGpuPass());
  // A result inserted into a larger tensor (a decode step's rotated keys
  // into the KV cache) is computed in place, into the slice: no copy
  // kernel after the one that computed it.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  buildBufferizationPipeline(pm);
  // One device allocation per call instead of one per buffer (a decode
  // step of a 124 M model had about 200): buffers whose lifetimes do not
  // overlap share bytes, which the one stream's order makes safe.
  if (options.planArena)
    pm.addNestedPass<func::FuncOp>(createPlanArenaPass());

  // Attention's kernel call (tfm-select-cpu-kernels) as one fused kernel,
  // decode's matrix-vector products as warp reductions, row reductions
  // (norms) as block reductions, prefill's products as tiled GEMMs; every
  // other linalg op (copies included) to a parallel loop nest, tiled into
  // blocks of threads, each loop nest a gpu.launch.
  LowerAttentionToGpuPassOptions attention;
  attention.splitDecodeKeys = options.splitAttention;
  pm.addPass(createLowerAttentionToGpuPass(attention));
  pm.addNestedPass<func::FuncOp>(createLowerMatvecToGpuPass());
  // Prefill's products with bf16 or f16 weights on tensor cores where the
  // architecture has mma.sync for them (sm_80: Ampere and newer).
  if (options.tensorCores && cudaArchNumber(options.cudaArch) >= 80)
    pm.addNestedPass<func::FuncOp>(createLowerMatmulToMmaPass());
  pm.addNestedPass<func::FuncOp>(createLowerMatmulToGpuTilesPass());
  LowerReductionsToGpuPassOptions reductions;
  reductions.fuseConsumers = options.fuseNorms;
  pm.addNestedPass<func::FuncOp>(createLowerReductionsToGpuPass(reductions));
  pm.addNestedPass<func::FuncOp>(createCopiesToLinalgPass());
  // No canonicalization until the loops are kernels: it would drop loops
  // of one iteration (a decode step's one row), leaving their bodies on the
  // host.
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createMapLoopsToGpuPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createPlaceBuffersOnDevicePass());
  // Constants (and dims and views of them) move into the kernels that use
  // them: folding hoisted them to the function's entry, and outlined as
  // they were they would be kernel parameters, unknown to the kernels'
  // optimizer (no unrolling, no merged loads) and copied at every launch.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createNameKernelsByModulePass());
  // Launches, allocations and copies as asynchronous ops on a stream (what
  // the GPU runtime calls take), waiting only where the host needs a
  // result.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  // Kernels: no libdevice without the CUDA toolkit, so the math functions
  // become arithmetic (upstream's polynomials, a few ulp of f32); what
  // convert-gpu-to-nvvm still calls libdevice for (__nv_sqrtf, __nv_floorf)
  // the driver's JIT resolves (driver 580 on an H100, test/gpu).
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addNestedPass<gpu::GPUModuleOp>(math::createMathExpandOpsPass());
  ApproximateMathPassOptions approximate;
  approximate.everyFunction = true;
  pm.addNestedPass<gpu::GPUModuleOp>(createApproximateMathPass(approximate));
  pm.addPass(createSCFToControlFlowPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.cudaArch;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (options.kernelsOnly)
    return;
  // PTX ("isa"): a cubin or fatbin would need the toolkit's ptxas.
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));

  // The host code, as on the CPU, plus the launches.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  addHostToLLVMPasses(pm, /*launchesKernels=*/true);
}

void mlir::tfm::printKernelAssembly(ModuleOp module, llvm::raw_ostream &os) {
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      os << "// kernel module @" << binary.getSymName() << "\n"
         << object.getObject().getValue() << "\n";
    }
  });
}

void mlir::tfm::registerCudaTranslations(DialectRegistry &registry) {
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  // How a gpu.binary is embedded and loaded (#gpu.select_object).
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}
