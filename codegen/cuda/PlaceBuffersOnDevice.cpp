//===- PlaceBuffersOnDevice.cpp - device buffers, host copies at the edge ===//
//
// See PlaceBuffersOnDevicePass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/BufferViews.h"
#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_PLACEBUFFERSONDEVICEPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Ops that only compute a buffer's address, shape or strides: the host
/// may run them on device buffers.
bool onlyDescribesBuffers(Operation *op) {
  return isa<memref::ViewOp, memref::SubViewOp, memref::CastOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp, memref::DimOp,
             memref::ReinterpretCastOp, memref::ExtractStridedMetadataOp,
             memref::ExtractAlignedPointerAsIndexOp, memref::AllocOp,
             memref::DeallocOp, gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp,
             gpu::LaunchOp>(op);
}

/// The global a `memref.get_global` reads, if it is constant.
memref::GlobalOp constantGlobalOf(Operation *op) {
  auto get = dyn_cast_or_null<memref::GetGlobalOp>(op);
  if (!get)
    return nullptr;
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  return global && global.getConstant() ? global : nullptr;
}

/// A constant global or a view of one: what a kernel may read from its
/// own module's copy of the global instead of from host memory.
bool viewsConstantGlobal(Operation *op) {
  if (op && isBufferView(op))
    op = viewedBuffer(op->getResult(0)).getDefiningOp();
  return constantGlobalOf(op) != nullptr;
}

/// The dynamic sizes of a buffer of `value`'s identity-layout type.
SmallVector<Value> dynamicSizesOf(OpBuilder &builder, Location loc,
                                  Value value) {
  auto type = cast<MemRefType>(value.getType());
  SmallVector<Value> sizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      sizes.push_back(memref::DimOp::create(builder, loc, value, dim));
  return sizes;
}

gpu::AllocOp allocateOnDevice(OpBuilder &builder, Location loc,
                              MemRefType type, ValueRange dynamicSizes) {
  return gpu::AllocOp::create(builder, loc, type, /*asyncToken=*/Type(),
                              /*asyncDependencies=*/ValueRange(),
                              dynamicSizes, /*symbolOperands=*/ValueRange(),
                              /*hostShared=*/nullptr);
}

void deallocateOnDevice(OpBuilder &builder, Location loc, Value buffer) {
  gpu::DeallocOp::create(builder, loc, /*asyncToken=*/Type(),
                         /*asyncDependencies=*/ValueRange(), buffer);
}

void copy(OpBuilder &builder, Location loc, Value to, Value from) {
  gpu::MemcpyOp::create(builder, loc, /*asyncToken=*/Type(),
                        /*asyncDependencies=*/ValueRange(), to, from);
}

/// The caller's inputs (token ids, positions, lengths, pixels, audio
/// features: tfm.host_input, or any i32 buffer) are host memory; the
/// weights blob (bytes) and the caches (f32, or int8 bytes) are the
/// runtime's device memory.
bool isHostInput(func::FuncOp function, BlockArgument argument) {
  auto type = dyn_cast<MemRefType>(argument.getType());
  return type && (type.getElementType().isInteger(32) ||
                  function.getArgAttr(argument.getArgNumber(),
                                      kHostInputArgAttrName));
}

struct PlaceBuffersOnDevicePass
    : mlir::tfm::impl::PlaceBuffersOnDevicePassBase<PlaceBuffersOnDevicePass> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      if (failed(refuseHostAccess(function)) ||
          failed(moveConstantGlobalsIntoKernels(function)))
        return signalPassFailure();
      moveAllocationsToDevice(function);
      if (failed(copyInputsIn(function)) || failed(copyResultsOut(function)))
        return signalPassFailure();
    }
  }

  LogicalResult refuseHostAccess(func::FuncOp function) {
    WalkResult result = function.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      bool touchesMemory = llvm::any_of(op->getOperandTypes(), [](Type type) {
        return isa<MemRefType>(type);
      });
      // Control flow passes buffers along without reading them.
      if (!touchesMemory || onlyDescribesBuffers(op) ||
          isa<func::ReturnOp, scf::ForOp, scf::IfOp, scf::YieldOp>(op))
        return WalkResult::advance();
      op->emitOpError("reads or writes a buffer on the host, outside a GPU "
                      "kernel (tfm-place-buffers-on-device): the GPU target "
                      "has no kernel for it");
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// Each launch that reads a constant global (or a view of one) gets its
  /// own get_global: outlining then copies the global into the kernel's
  /// module (device memory) instead of passing the host's address.
  LogicalResult moveConstantGlobalsIntoKernels(func::FuncOp function) {
    SmallVector<gpu::LaunchOp> launches;
    function.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches)
      if (failed(sinkOperationsIntoLaunchOp(launch, [](Operation *op) {
            return isa<arith::ConstantOp>(op) || viewsConstantGlobal(op);
          })))
        return failure();
    // The host's copies left unused.
    SmallVector<Operation *> hostViews;
    function.walk([&](Operation *op) {
      if (viewsConstantGlobal(op) && !op->getParentOfType<gpu::LaunchOp>())
        hostViews.push_back(op);
    });
    for (Operation *op : llvm::reverse(hostViews))
      if (op->use_empty())
        op->erase();
    // Any global still reaching a kernel from the host (itself or through
    // views) is one the kernel would read in host memory, or write.
    WalkResult result = function.walk([&](memref::GetGlobalOp get) {
      if (get->getParentOfType<gpu::LaunchOp>() || !readInKernel(get))
        return WalkResult::advance();
      get.emitOpError("global @")
          << get.getName()
          << " would be read by a GPU kernel in host memory "
             "(tfm-place-buffers-on-device): only constant globals move "
             "into kernels";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// Whether `op`'s results, or views of them, are used inside a kernel.
  static bool readInKernel(Operation *op) {
    for (Operation *user : op->getUsers()) {
      if (user->getParentOfType<gpu::LaunchOp>())
        return true;
      if (isBufferView(user) && readInKernel(user))
        return true;
    }
    return false;
  }

  void moveAllocationsToDevice(func::FuncOp function) {
    SmallVector<memref::AllocOp> allocs;
    SmallVector<memref::DeallocOp> deallocs;
    function.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        allocs.push_back(alloc);
      else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        deallocs.push_back(dealloc);
      return WalkResult::advance();
    });
    for (memref::AllocOp alloc : allocs) {
      OpBuilder builder(alloc);
      gpu::AllocOp device = allocateOnDevice(
          builder, alloc.getLoc(), alloc.getType(), alloc.getDynamicSizes());
      alloc.replaceAllUsesWith(device.getMemref());
      alloc.erase();
    }
    for (memref::DeallocOp dealloc : deallocs) {
      OpBuilder builder(dealloc);
      deallocateOnDevice(builder, dealloc.getLoc(), dealloc.getMemref());
      dealloc.erase();
    }
  }

  SmallVector<func::ReturnOp> returnsOf(func::FuncOp function) {
    SmallVector<func::ReturnOp> returns;
    function.walk([&](func::ReturnOp ret) { returns.push_back(ret); });
    return returns;
  }

  LogicalResult copyInputsIn(func::FuncOp function) {
    Block &entry = function.getBody().front();
    for (BlockArgument argument : entry.getArguments()) {
      bool hostInput = isHostInput(function, argument);
      function.removeArgAttr(argument.getArgNumber(),
                             kHostInputArgAttrName);
      if (!hostInput || argument.use_empty())
        continue;
      OpBuilder builder = OpBuilder::atBlockBegin(&entry);
      Location loc = argument.getLoc();
      auto type = cast<MemRefType>(argument.getType());
      if (!type.getLayout().isIdentity())
        return function.emitOpError("input ")
               << argument.getArgNumber()
               << " has a strided layout: the GPU target copies inputs with "
                  "an identity layout";
      Operation *first = &entry.front();
      gpu::AllocOp device = allocateOnDevice(
          builder, loc, type, dynamicSizesOf(builder, loc, argument));
      copy(builder, loc, device.getMemref(), argument);
      // Everything after the copy reads the device's.
      argument.replaceUsesWithIf(device.getMemref(), [&](OpOperand &use) {
        Operation *user = use.getOwner();
        while (user->getBlock() != &entry)
          user = user->getParentOp();
        return user == first || first->isBeforeInBlock(user);
      });
      for (func::ReturnOp ret : returnsOf(function)) {
        OpBuilder atReturn(ret);
        deallocateOnDevice(atReturn, ret.getLoc(), device.getMemref());
      }
    }
    return success();
  }

  LogicalResult copyResultsOut(func::FuncOp function) {
    for (func::ReturnOp ret : returnsOf(function)) {
      OpBuilder builder(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value result = operand.get();
        auto type = dyn_cast<MemRefType>(result.getType());
        if (!type)
          continue;
        if (!type.getLayout().isIdentity())
          return ret.emitOpError("result ")
                 << operand.getOperandNumber()
                 << " has a strided layout: the GPU target returns buffers "
                    "with an identity layout";
        Location loc = ret.getLoc();
        auto host = memref::AllocOp::create(
            builder, loc, type, dynamicSizesOf(builder, loc, result));
        copy(builder, loc, host, result);
        // The result was the function's to hand over: it is its own.
        Value source = result;
        while (auto cast = source.getDefiningOp<memref::CastOp>())
          source = cast.getSource();
        if (source.getDefiningOp<gpu::AllocOp>())
          deallocateOnDevice(builder, loc, source);
        operand.set(host);
      }
    }
    return success();
  }
};

} // namespace
