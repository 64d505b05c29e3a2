//===- Passes.td - what packaging needs of the IR --*- tablegen -*-===//

#ifndef TFM_CODEGEN_PACKAGING_PASSES_TD
#define TFM_CODEGEN_PACKAGING_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExportEntryPointsPass : Pass<"tfm-export-entry-points", "ModuleOp"> {
  let summary = "Give a model's public functions a C interface and its prefix";
  let description = [{
    The runtime calls a model's entry points (`@forward`, `@prefill`,
    `@decode`, ...) from C through MLIR's C interface: each public function
    gets `llvm.emit_c_interface`. With a non-empty `prefix` (libraries) each
    is also renamed `@<prefix>_<name>`, so that several models link into one
    program; call sites follow the rename. The module's `tfm.model`, read
    by the packager before lowering, is dropped: the result is code that
    LLVM-level tools read without the tfm dialect.

    ```mlir
    // tfm-export-entry-points{prefix=story}
    func.func @forward(...)  ->  func.func @story_forward(...) attributes {llvm.emit_c_interface}
    ```
  }];
  let options = [
    Option<"prefix", "prefix", "std::string", /*default=*/"\"\"",
           "C identifier prefixing every public function's name">
  ];
}

#endif // TFM_CODEGEN_PACKAGING_PASSES_TD
