//===- KernelsOnHost.cpp - a model's GPU kernels compiled for the CPU -----===//
//
// See KernelsOnHost.h. The kernels are translated as the NVPTX path would
// translate them (NVVM ops become llvm.nvvm.* intrinsics), and then each
// intrinsic call is replaced by host code: the special registers, barriers,
// shuffles and mma.sync by calls into the emulator, which runs a block's
// threads as fibers (runtime/cuda/cuda_emulator.c); libdevice's functions
// (__nv_sqrtf) by libm's. Shared memory stays in address space 3, which
// x86 addresses as plain memory.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/KernelsOnHost.h"
#include "runtime/cuda/cuda_emulator.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Linker/Linker.h"

using namespace mlir;

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The emulator's function `name` of type `type`, declared in `module`.
llvm::FunctionCallee standIn(llvm::Module &module, llvm::StringRef name,
                             llvm::Type *result,
                             llvm::ArrayRef<llvm::Type *> params) {
  return module.getOrInsertFunction(
      name, llvm::FunctionType::get(result, params, /*isVarArg=*/false));
}

/// An alloca of `count` x `type` at the entry of the function of `call`
/// (where stack slots are made once, not at every loop iteration).
llvm::Value *entryAlloca(llvm::CallInst *call, llvm::Type *type,
                         unsigned count) {
  llvm::Function *f = call->getFunction();
  llvm::IRBuilder<> entry(&*f->getEntryBlock().getFirstInsertionPt());
  return entry.CreateAlloca(type, entry.getInt32(count));
}

/// tfm_emu_sreg's number for llvm.nvvm.read.ptx.sreg.<reg>[.<dim>], -1 for
/// a register the emulator does not have.
int specialRegister(llvm::StringRef reg) {
  auto [kind, dim] = reg.split('.');
  int base = llvm::StringSwitch<int>(kind)
                 .Case("tid", TFM_EMU_TID)
                 .Case("ntid", TFM_EMU_NTID)
                 .Case("ctaid", TFM_EMU_CTAID)
                 .Case("nctaid", TFM_EMU_NCTAID)
                 .Case("laneid", TFM_EMU_LANEID)
                 .Case("warpsize", TFM_EMU_WARPSIZE)
                 .Default(-1);
  if (base < 0 || base >= TFM_EMU_LANEID)
    return dim.empty() ? base : -1;
  int offset = llvm::StringSwitch<int>(dim)
                   .Case("x", 0)
                   .Case("y", 1)
                   .Case("z", 2)
                   .Default(-1);
  return offset < 0 ? -1 : base + offset;
}

/// shfl.sync's replacement: the value moved as 32 bits, and the
/// predicate of the `p` forms.
llvm::Value *shuffle(llvm::CallInst *call, int mode, bool withPredicate) {
  llvm::Module &module = *call->getModule();
  llvm::IRBuilder<> b(call);
  llvm::Type *i32 = b.getInt32Ty();
  llvm::Value *valid = entryAlloca(call, i32, 1);
  llvm::Value *value = call->getArgOperand(1);
  llvm::Type *valueType = value->getType();
  llvm::Value *bits = b.CreateBitCast(value, i32);
  llvm::Value *moved = b.CreateCall(
      standIn(module, "tfm_emu_shfl", i32,
              {i32, i32, i32, i32, i32, b.getPtrTy()}),
      {b.getInt32(mode), call->getArgOperand(0), bits, call->getArgOperand(2),
       call->getArgOperand(3), valid});
  llvm::Value *result = b.CreateBitCast(moved, valueType);
  if (!withPredicate)
    return result;
  llvm::Value *inRange =
      b.CreateICmpNE(b.CreateLoad(i32, valid), b.getInt32(0));
  llvm::Value *pair = llvm::PoisonValue::get(call->getType());
  pair = b.CreateInsertValue(pair, result, 0);
  return b.CreateInsertValue(pair, inRange, 1);
}

/// mma.sync m16n8k16 (bf16 or f16 inputs, f32 accumulators): the lane's
/// fragments stored for tfm_emu_mma_m16n8k16, D's loaded back.
llvm::Expected<llvm::Value *> mma(llvm::CallInst *call) {
  llvm::Module &module = *call->getModule();
  llvm::IRBuilder<> b(call);
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  auto *resultType = llvm::dyn_cast<llvm::StructType>(call->getType());
  if (call->arg_size() != 10 || !resultType ||
      resultType->getNumElements() != 4 ||
      resultType->getElementType(0) != f32)
    return makeError("the CUDA emulator has m16n8k16 products with f32 "
                     "accumulators only, not " +
                     call->getCalledFunction()->getName());
  llvm::Type *aType = call->getArgOperand(0)->getType();
  int kind;
  if (aType == i32)
    kind = TFM_EMU_MMA_BF16; // bf16 pairs in 32-bit registers
  else if (aType->isVectorTy() && aType->getScalarType()->isHalfTy())
    kind = TFM_EMU_MMA_F16; // f16 pairs
  else
    return makeError("the CUDA emulator has bf16 and f16 products only, not " +
                     call->getCalledFunction()->getName());
  llvm::Value *a = entryAlloca(call, i32, 4), *bs = entryAlloca(call, i32, 2);
  llvm::Value *c = entryAlloca(call, f32, 4), *d = entryAlloca(call, f32, 4);
  auto store = [&](llvm::Value *array, llvm::Type *element, unsigned index,
                   llvm::Value *value) {
    b.CreateStore(b.CreateBitCast(value, element),
                  b.CreateConstGEP1_32(element, array, index));
  };
  for (unsigned i = 0; i < 4; ++i)
    store(a, i32, i, call->getArgOperand(i));
  for (unsigned i = 0; i < 2; ++i)
    store(bs, i32, i, call->getArgOperand(4 + i));
  for (unsigned i = 0; i < 4; ++i)
    store(c, f32, i, call->getArgOperand(6 + i));
  b.CreateCall(standIn(module, "tfm_emu_mma_m16n8k16", b.getVoidTy(),
                       {i32, b.getPtrTy(), b.getPtrTy(), b.getPtrTy(),
                        b.getPtrTy()}),
               {b.getInt32(kind), a, bs, c, d});
  llvm::Value *result = llvm::PoisonValue::get(resultType);
  for (unsigned i = 0; i < 4; ++i)
    result = b.CreateInsertValue(
        result, b.CreateLoad(f32, b.CreateConstGEP1_32(f32, d, i)), i);
  return result;
}

/// The host code for one call of NVVM intrinsic `name`; null when the call
/// has no result to replace.
llvm::Expected<llvm::Value *> replaceIntrinsicCall(llvm::CallInst *call,
                                                   llvm::StringRef name) {
  llvm::Module &module = *call->getModule();
  llvm::IRBuilder<> b(call);
  llvm::Type *i32 = b.getInt32Ty();
  llvm::StringRef rest = name;
  if (rest.consume_front("llvm.nvvm.read.ptx.sreg.")) {
    int which = specialRegister(rest);
    if (which < 0)
      return makeError("the CUDA emulator has no special register " + name);
    return b.CreateCall(standIn(module, "tfm_emu_sreg", i32, {i32}),
                        {b.getInt32(which)});
  }
  if (name == "llvm.nvvm.bar.warp.sync") {
    b.CreateCall(standIn(module, "tfm_emu_warp_sync", b.getVoidTy(), {i32}),
                 {call->getArgOperand(0)});
    return nullptr;
  }
  // bar.sync / barrier0 / barrier.cta.sync.aligned.all: the block's
  // barrier 0, all threads (the kernels use no other).
  if (name.starts_with("llvm.nvvm.barrier") ||
      name.starts_with("llvm.nvvm.bar.sync")) {
    b.CreateCall(standIn(module, "tfm_emu_barrier", b.getVoidTy(), {}));
    return nullptr;
  }
  if (rest.consume_front("llvm.nvvm.shfl.sync.")) {
    auto [modeName, type] = rest.split('.');
    int mode = llvm::StringSwitch<int>(modeName)
                   .Case("idx", TFM_EMU_SHFL_IDX)
                   .Case("up", TFM_EMU_SHFL_UP)
                   .Case("down", TFM_EMU_SHFL_DOWN)
                   .Case("bfly", TFM_EMU_SHFL_BFLY)
                   .Default(-1);
    if (mode < 0 || call->arg_size() != 4)
      return makeError("the CUDA emulator has no shuffle " + name);
    return shuffle(call, mode, type.ends_with("p"));
  }
  if (name.starts_with("llvm.nvvm.mma.m16n8k16.row.col"))
    return mma(call);
  return makeError("the CUDA emulator has no stand-in for " + name);
}

/// Replaces every NVVM intrinsic and libdevice function of `module`.
llvm::Error replaceDeviceFunctions(llvm::Module &module) {
  for (llvm::Function &f : llvm::make_early_inc_range(module)) {
    if (!f.isDeclaration())
      continue;
    llvm::StringRef name = f.getName();
    if (name.starts_with("__nv_")) {
      // libdevice's float functions are libm's of the same name and type.
      llvm::FunctionCallee libm =
          module.getOrInsertFunction(name.drop_front(5), f.getFunctionType());
      f.replaceAllUsesWith(libm.getCallee());
      f.eraseFromParent();
      continue;
    }
    if (!name.starts_with("llvm.nvvm."))
      continue;
    std::string intrinsic = name.str();
    for (llvm::User *user : llvm::make_early_inc_range(f.users())) {
      auto *call = llvm::dyn_cast<llvm::CallInst>(user);
      if (!call)
        return makeError("the CUDA emulator cannot replace a use of " +
                         intrinsic + " that is not a call");
      llvm::Expected<llvm::Value *> replacement =
          replaceIntrinsicCall(call, intrinsic);
      if (!replacement)
        return replacement.takeError();
      if (*replacement)
        call->replaceAllUsesWith(*replacement);
      call->eraseFromParent();
    }
    f.eraseFromParent();
  }
  return llvm::Error::success();
}

/// `void <kernel>.host_entry(ptr params)`: the kernel called with the
/// arguments the launch's array points at.
llvm::Function *hostEntry(llvm::Function &kernel) {
  llvm::Module &module = *kernel.getParent();
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context),
                                       {llvm::PointerType::get(context, 0)},
                                       /*isVarArg=*/false);
  llvm::Function *entry =
      llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage,
                             kernel.getName() + ".host_entry", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", entry));
  llvm::SmallVector<llvm::Value *> arguments;
  for (llvm::Argument &argument : kernel.args()) {
    llvm::Value *slot = b.CreateLoad(
        b.getPtrTy(),
        b.CreateConstGEP1_32(b.getPtrTy(), entry->getArg(0),
                             argument.getArgNo()));
    arguments.push_back(b.CreateLoad(argument.getType(), slot));
  }
  b.CreateCall(&kernel, arguments);
  b.CreateRetVoid();
  return entry;
}

/// A private constant C string.
llvm::Constant *cString(llvm::Module &module, llvm::StringRef text,
                        const llvm::Twine &name) {
  llvm::Constant *data = llvm::ConstantDataArray::getString(
      module.getContext(), text, /*AddNull=*/true);
  return new llvm::GlobalVariable(module, data->getType(), /*isConstant=*/true,
                                  llvm::GlobalValue::PrivateLinkage, data,
                                  name);
}

/// tfm_emu_kernels (name, entry, which parameters are pointers) and
/// tfm_emu_kernel_count.
void addKernelTable(llvm::Module &module,
                    llvm::ArrayRef<llvm::Function *> kernels) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::get(context, 0);
  auto *entryType = llvm::StructType::get(context, {ptr, ptr, ptr});
  llvm::SmallVector<llvm::Constant *> entries;
  llvm::IRBuilder<> b(context);
  for (llvm::Function *kernel : kernels) {
    std::string params;
    for (llvm::Argument &argument : kernel->args())
      params += argument.getType()->isPointerTy() ? 'p' : '.';
    entries.push_back(llvm::ConstantStruct::get(
        entryType,
        {cString(module, kernel->getName(), kernel->getName() + ".name"),
         hostEntry(*kernel),
         cString(module, params, kernel->getName() + ".params")}));
  }
  auto *tableType = llvm::ArrayType::get(entryType, entries.size());
  new llvm::GlobalVariable(module, tableType, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantArray::get(tableType, entries),
                           "tfm_emu_kernels");
  new llvm::GlobalVariable(
      module, b.getInt64Ty(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage,
      b.getInt64(static_cast<int64_t>(entries.size())), "tfm_emu_kernel_count");
}

} // namespace

llvm::Expected<std::unique_ptr<llvm::Module>>
mlir::tfm::translateKernelsForHost(ModuleOp module,
                                   llvm::LLVMContext &llvmContext,
                                   const NativeTarget &target) {
  auto kernels = std::make_unique<llvm::Module>("kernels", llvmContext);
  llvm::Linker linker(*kernels);
  llvm::StringSet<> kernelNames;
  for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
    for (auto function : gpuModule.getOps<LLVM::LLVMFuncOp>())
      if (function->hasAttr(gpu::GPUDialect::getKernelFuncAttrName()) ||
          function->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
        kernelNames.insert(function.getSymName());
    // The module's functions and globals, translated on their own (the
    // gpu.module itself is not a translatable module).
    OwningOpRef<ModuleOp> body = ModuleOp::create(gpuModule.getLoc());
    OpBuilder builder(body->getBodyRegion());
    for (Operation &op : gpuModule.getBody()->without_terminator())
      builder.clone(op);
    std::unique_ptr<llvm::Module> translated =
        translateModuleToLLVMIR(*body, llvmContext, gpuModule.getSymName());
    if (!translated)
      return makeError("cannot translate kernel module @" +
                       gpuModule.getSymName() + " to LLVM IR");
    if (linker.linkInModule(std::move(translated)))
      return makeError("cannot link kernel module @" + gpuModule.getSymName());
  }
  if (llvm::Error err = replaceDeviceFunctions(*kernels))
    return std::move(err);
  llvm::SmallVector<llvm::Function *> entries;
  for (llvm::Function &f : *kernels) {
    if (f.isDeclaration())
      continue;
    if (kernelNames.contains(f.getName()))
      entries.push_back(&f);
    // Host functions: the C convention, and no GPU as their target.
    f.setCallingConv(llvm::CallingConv::C);
    f.removeFnAttr("target-cpu");
    f.removeFnAttr("target-features");
  }
  if (llvm::NamedMDNode *annotations =
          kernels->getNamedMetadata("nvvm.annotations"))
    kernels->eraseNamedMetadata(annotations);
  if (entries.empty())
    return makeError("the model has no GPU kernels to emulate");
  addKernelTable(*kernels, entries);
  std::string error = optimizeForTarget(*kernels, target);
  if (!error.empty())
    return makeError(error);
  return std::move(kernels);
}
