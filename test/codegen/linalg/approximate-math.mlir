// RUN: tfm-opt %s -tfm-approximate-math | FileCheck %s
// RUN: tfm-opt %s -tfm-approximate-math | FileCheck %s --check-prefix=GONE

// tanh, erf and exp become polynomial arithmetic (vectorizable); what the
// pass does not approximate (sin, powf) stays for libm.
// GONE-LABEL: func.func @activations
// GONE-NOT: math.tanh
// GONE-NOT: math.erf
// GONE-NOT: math.exp
// GONE: return
// CHECK-LABEL: func.func @activations
// CHECK-DAG: math.sin
// CHECK-DAG: math.powf
// CHECK-DAG: math.fma
func.func @activations(%x: f32) -> (f32, f32, f32, f32, f32) {
  %0 = math.tanh %x : f32
  %1 = math.erf %x : f32
  %2 = math.exp %x : f32
  %3 = math.sin %x : f32
  %4 = math.powf %x, %x : f32
  return %0, %1, %2, %3, %4 : f32, f32, f32, f32, f32
}
