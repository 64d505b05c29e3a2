//===- HostPipeline.cpp - host code to the LLVM dialect and native code ---===//
//
// See HostPipeline.h. LLVM's O3 pipeline (loop vectorizer included)
// optimizes for the target CPU.
//
//===----------------------------------------------------------------------===//

#include "codegen/host/HostPipeline.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;
using namespace mlir::tfm;

void mlir::tfm::addHostToLLVMPasses(OpPassManager &pm, bool launchesKernels) {
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  if (launchesKernels)
    pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {

std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const NativeTarget &target, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return nullptr;
  std::string cpu = target.cpu;
  std::string features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures featureSet;
    for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
      featureSet.AddFeature(name, enabled);
    features = featureSet.getString();
  }
  llvm::TargetOptions options;
  auto level = target.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : target.optLevel == 0 ? llvm::CodeGenOptLevel::None
                                      : llvm::CodeGenOptLevel::Default;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine)
    error = "cannot create a target machine for CPU '" + cpu + "'";
  return machine;
}

} // namespace

std::unique_ptr<llvm::Module>
mlir::tfm::translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                                const NativeTarget &target) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    module.emitError("failed to translate the LLVM dialect to LLVM IR");
    return nullptr;
  }
  std::string error = optimizeForTarget(*llvmModule, target);
  if (!error.empty()) {
    module.emitError(error);
    return nullptr;
  }
  return llvmModule;
}

std::string mlir::tfm::optimizeForTarget(llvm::Module &llvmModule,
                                         const NativeTarget &target) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(target, error);
  if (!machine)
    return error;
  llvmModule.setDataLayout(machine->createDataLayout());
  llvmModule.setTargetTriple(machine->getTargetTriple());
  // Per-function attributes so that LLVM's vectorizers see the target.
  for (llvm::Function &f : llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", machine->getTargetCPU());
    f.addFnAttr("target-features", machine->getTargetFeatureString());
  }
  if (target.optLevel == 0)
    return "";

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(machine.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = target.optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : target.optLevel == 2 ? llvm::OptimizationLevel::O2
                                                         : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(llvmModule, mam);
  return "";
}

std::string mlir::tfm::emitNativeCode(llvm::Module &module,
                                      const NativeTarget &target,
                                      bool assembly, llvm::StringRef path) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(target, error);
  if (!machine)
    return error;
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec,
                           assembly ? llvm::sys::fs::OF_Text
                                    : llvm::sys::fs::OF_None);
  if (ec)
    return "cannot open '" + path.str() + "': " + ec.message();
  llvm::legacy::PassManager pm;
  if (machine->addPassesToEmitFile(pm, out.os(), nullptr,
                                   assembly ? llvm::CodeGenFileType::AssemblyFile
                                            : llvm::CodeGenFileType::ObjectFile))
    return "the target cannot emit this file type";
  pm.run(module);
  out.keep();
  return "";
}
