// RUN: tfm-opt %s -tfm-name-kernels-by-module | FileCheck %s

// gpu-kernel-outlining names each function's kernels alike in modules it
// numbers: each kernel takes its module's name, and the launches follow;
// a module of two kernels prefixes both with its name.
// CHECK: gpu.module @decode_kernel {
// CHECK-NEXT: gpu.func @decode_kernel() kernel
// CHECK: gpu.module @decode_kernel_0 {
// CHECK-NEXT: gpu.func @decode_kernel_0() kernel
// CHECK: gpu.module @pair {
// CHECK-NEXT: gpu.func @pair_first() kernel
// CHECK: gpu.func @pair_second() kernel
// CHECK-LABEL: func.func @decode
// CHECK: gpu.launch_func @decode_kernel::@decode_kernel
// CHECK: gpu.launch_func @decode_kernel_0::@decode_kernel_0
// CHECK: gpu.launch_func @pair::@pair_second
module attributes {gpu.container_module} {
  gpu.module @decode_kernel {
    gpu.func @decode_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @decode_kernel_0 {
    gpu.func @decode_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @pair {
    gpu.func @first() kernel {
      gpu.return
    }
    gpu.func @second() kernel {
      gpu.return
    }
  }
  func.func @decode() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @decode_kernel::@decode_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @decode_kernel_0::@decode_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @pair::@second blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
