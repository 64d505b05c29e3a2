// The registered pipeline runs exactly what tfmc runs, with the same
// switches as options: a one-layer model in tfm IR goes through the KV-cache
// derivation, fusion, the lowering and bufferization to the LLVM dialect and
// on to LLVM IR.
// RUN: tfm-opt %s --tfm-codegen-pipeline="max-context=8" | mlir-translate --mlir-to-llvmir | FileCheck %s
// RUN: tfm-opt %s --tfm-codegen-pipeline="kv-cache=false fuse-qkv=false prefix=tiny" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=OFF
// Stopping after the tfm-level passes shows what the options changed.
// RUN: tfm-opt %s --tfm-codegen-pipeline="max-context=8" --mlir-print-ir-after=tfm-fuse-qkv 2>&1 -o /dev/null | FileCheck %s --check-prefix=TFM
// RUN: tfm-opt %s --tfm-codegen-pipeline="fuse-qkv=false fuse-mlp=false fuse-norm=false" --mlir-print-ir-after=canonicalize 2>&1 -o /dev/null | FileCheck %s --check-prefix=UNFUSED
// RUN: not tfm-opt %s --tfm-codegen-pipeline="fuse-everything=true" 2>&1 | FileCheck %s --check-prefix=BAD-OPTION

// CHECK-DAG: define {{.*}}void @_mlir_ciface_forward(ptr
// CHECK-DAG: define {{.*}}void @_mlir_ciface_prefill(ptr
// CHECK-DAG: define {{.*}}void @_mlir_ciface_decode(ptr
// CHECK-DAG: call void @tfm_rt_attention(
// OFF-NOT: @_mlir_ciface_prefill
// OFF-DAG: define {{.*}}void @_mlir_ciface_tiny_forward(ptr
// OFF-DAG: define {{.*}} @tiny_forward(
// TFM: func.func @prefill({{.*}}tensor<1x2x8x2x4xf32> {tfm.cache = #tfm.cache<self_attention>}
// TFM: tfm.concat
// UNFUSED-NOT: tfm.concat
// UNFUSED-NOT: tfm.add_layer_norm
// BAD-OPTION: no such option fuse-everything

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @wpe : tensor<32x8xf32>
tfm.weight_decl @g : tensor<8xf32>
tfm.weight_decl @b : tensor<8xf32>
tfm.weight_decl @wq : tensor<8x8xf32>
tfm.weight_decl @wk : tensor<8x8xf32>
tfm.weight_decl @wv : tensor<8x8xf32>
tfm.weight_decl @wo : tensor<8x8xf32>
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x16xf32> {
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %wpe = tfm.weight @wpe : tensor<32x8xf32>
  %g = tfm.weight @g : tensor<8xf32>
  %b = tfm.weight @b : tensor<8xf32>
  %wq = tfm.weight @wq : tensor<8x8xf32>
  %wk = tfm.weight @wk : tensor<8x8xf32>
  %wv = tfm.weight @wv : tensor<8x8xf32>
  %wo = tfm.weight @wo : tensor<8x8xf32>
  %x0 = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  %pe = tfm.embedding %wpe[%pos] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %x = tfm.add %x0, %pe : tensor<?x8xf32>
  %h = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %q = tfm.linear %h, %wq : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %k = tfm.linear %h, %wk : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %v = tfm.linear %h, %wv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o = tfm.linear %a, %wo : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %x1 = tfm.add %x, %o : tensor<?x8xf32>
  %f = tfm.layer_norm %x1, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %f, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}
