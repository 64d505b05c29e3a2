//===- EntryPointTable.cpp - the generated C of a model's entry points --===//

#include "codegen/packaging/EntryPointTable.h"

#include "tfm/tfm_model_abi.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

const char *cType(int32_t dtype) {
  return dtype == TFM_DTYPE_I32 ? "int32_t"
         : dtype == TFM_DTYPE_I64 ? "int64_t"
         : dtype == TFM_DTYPE_I8  ? "int8_t"
         : dtype == TFM_DTYPE_BF16 || dtype == TFM_DTYPE_F16 ? "uint16_t"
                                  : "float";
}

void writeShape(const std::vector<int64_t> &shape, llvm::raw_ostream &os) {
  os << shape.size() << ", {";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "}";
}

void writeDescriptors(llvm::StringRef symbol,
                      const std::vector<TensorDescription> &tensors,
                      llvm::raw_ostream &os) {
  if (tensors.empty())
    return;
  os << "static const tfm_tensor_desc " << symbol << "[] = {\n";
  for (const TensorDescription &t : tensors) {
    os << "    {" << t.role << ", " << t.dtype << ", ";
    writeShape(t.shape, os);
    os << ", " << t.bound << "},\n";
  }
  os << "};\n";
}

/// A memref descriptor named `name` viewing tfm_tensor `tensor` (contiguous
/// row-major).
void writeMemref(llvm::StringRef name, llvm::StringRef tensor, int32_t dtype,
                 size_t rank, llvm::raw_ostream &os) {
  os << "  TFM_MEMREF(" << cType(dtype) << ", " << rank << ") " << name
     << ";\n  " << name << ".allocated = " << name << ".aligned = ("
     << cType(dtype) << " *)" << tensor << ".data;\n  " << name
     << ".offset = 0;\n";
  for (size_t d = rank; d-- > 0;) {
    os << "  " << name << ".sizes[" << d << "] = " << tensor << ".shape[" << d
       << "];\n  " << name << ".strides[" << d << "] = ";
    if (d + 1 == rank)
      os << "1;\n";
    else
      os << name << ".strides[" << d + 1 << "] * " << name << ".sizes["
         << d + 1 << "];\n";
  }
}

/// The generated call of one entry point.
void writeCall(const EntryPointDescription &entry, const ModelDescription &model,
               llvm::StringRef function, llvm::raw_ostream &os) {
  // The function itself: result descriptor, weights, then its arguments
  // (memrefs by pointer, positions and slots by value).
  os << "void " << function << "(void *, const tfm_memref1d *";
  for (int32_t argument : entry.arguments) {
    bool scalar = argument >= 0 && entry.inputs[argument].shape.empty();
    os << (scalar ? ", int64_t" : ", void *");
  }
  os << ");\n\n";
  os << "static int32_t call_" << entry.name
     << "(const tfm_memref1d *weights, const tfm_tensor *inputs,\n"
     << "    tfm_tensor *const *caches, tfm_tensor *outputs) {\n"
     << "  jmp_buf jump;\n"
     << "  /* The runtime releases what the call allocated, then jumps. */\n"
     << "  if (setjmp(jump))\n    return 6; /* TFM_ERROR_OUT_OF_MEMORY */\n"
     << "  tfm_call_frame *frame = tfm_call_begin(&jump);\n"
     << "  if (!frame)\n    return 6;\n";
  std::vector<std::string> callArguments;
  for (auto [index, argument] : llvm::enumerate(entry.arguments)) {
    std::string name = "arg" + std::to_string(index);
    if (argument >= 0 && entry.inputs[argument].shape.empty()) {
      callArguments.push_back("*(const int64_t *)inputs[" +
                              std::to_string(argument) + "].data");
      continue;
    }
    const TensorDescription &tensor =
        argument >= 0 ? entry.inputs[argument]
                      : model.caches[entry.caches[-1 - argument]];
    std::string source = argument >= 0
                             ? "inputs[" + std::to_string(argument) + "]"
                             : "(*caches[" + std::to_string(-1 - argument) +
                                   "])";
    writeMemref(name, source, tensor.dtype, tensor.shape.size(), os);
    callArguments.push_back("&" + name);
  }
  // The results: MLIR's C interface writes them through one pointer, to
  // the struct of their descriptors (one result: that descriptor alone,
  // the same layout).
  os << "  struct {\n";
  for (auto [i, result] : llvm::enumerate(entry.outputs))
    os << "    TFM_MEMREF(" << cType(result.dtype) << ", "
       << result.shape.size() << ") r" << i << ";\n";
  os << "  } result;\n  " << function << "(&result, weights";
  for (const std::string &argument : callArguments)
    os << ", " << argument;
  os << ");\n  tfm_call_end(frame);\n";
  for (auto [i, result] : llvm::enumerate(entry.outputs)) {
    std::string out = "  outputs[" + std::to_string(i) + "].",
                r = "result.r" + std::to_string(i) + ".";
    os << out << "data = " << r << "aligned + " << r << "offset;\n"
       << out << "dtype = " << result.dtype << ";\n"
       << out << "rank = " << result.shape.size() << ";\n";
    for (size_t d = 0; d < result.shape.size(); ++d)
      os << out << "shape[" << d << "] = " << r << "sizes[" << d << "];\n";
    os << out << "owner = " << r << "allocated;\n";
  }
  os << "  return 0;\n}\n\n";
}

} // namespace

void mlir::tfm::writeEntryPointTable(const ModelDescription &model,
                                     llvm::StringRef symbolPrefix,
                                     llvm::raw_ostream &os) {
  os << "#include <setjmp.h>\n\n";
  for (const EntryPointDescription &entry : model.entryPoints) {
    std::string function = (symbolPrefix + entry.name).str();
    writeDescriptors("inputs_" + entry.name, entry.inputs, os);
    writeDescriptors("outputs_" + entry.name, entry.outputs, os);
    if (!entry.caches.empty()) {
      os << "static const int32_t caches_" << entry.name << "[] = {";
      for (size_t i = 0; i < entry.caches.size(); ++i)
        os << (i ? ", " : "") << entry.caches[i];
      os << "};\n";
    }
    writeCall(entry, model, function, os);
  }
  os << "static const tfm_entry_point tfm_entry_points[] = {\n";
  for (const EntryPointDescription &entry : model.entryPoints) {
    os << "    {\"" << entry.name << "\", " << entry.inputs.size() << ", "
       << (entry.inputs.empty() ? "0" : "inputs_" + entry.name) << ", "
       << entry.outputs.size() << ", "
       << (entry.outputs.empty() ? "0" : "outputs_" + entry.name) << ", "
       << entry.caches.size() << ", "
       << (entry.caches.empty() ? "0" : "caches_" + entry.name) << ", call_"
       << entry.name << ", (void (*)(void))" << symbolPrefix << entry.name
       << "},\n";
  }
  os << "};\n";
  if (!model.caches.empty()) {
    os << "static const tfm_cache_desc tfm_caches[] = {\n";
    for (const TensorDescription &cache : model.caches) {
      os << "    {" << cache.cacheKind << ", " << cache.dtype << ", ";
      writeShape(cache.shape, os);
      os << ", " << cache.window << "},\n";
    }
    os << "};\n";
  }
}
