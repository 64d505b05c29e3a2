// tfm-convolutions-as-gemm: a 2-D convolution as its windows (im2col) and a
// tfm.linear with the convolution's weight and bias; a 1x1 convolution of
// stride 1 as the linear on the feature map's rows.
// RUN: tfm-opt %s -split-input-file -tfm-convolutions-as-gemm | FileCheck %s

// CHECK-LABEL: func.func @conv3x3
// CHECK: %[[W:.*]] = tfm.image_windows %arg0 {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : tensor<8x8x16xf32> -> tensor<16x144xf32>
// CHECK: %[[P:.*]] = tfm.linear %[[W]], %arg1 bias %arg2 : (tensor<16x144xf32>, tensor<32x144xf32>, tensor<32xf32>) -> tensor<16x32xf32>
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [4, 4, 32] : tensor<16x32xf32> into tensor<4x4x32xf32>
// CHECK-NOT: tfm.conv2d
func.func @conv3x3(%x: tensor<8x8x16xf32>, %w: tensor<32x144xf32>, %b: tensor<32xf32>) -> tensor<4x4x32xf32> {
  %y = tfm.conv2d %x, %w bias %b {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>, tensor<32xf32>) -> tensor<4x4x32xf32>
  return %y : tensor<4x4x32xf32>
}

// -----

// CHECK-LABEL: func.func @pointwise
// CHECK: %[[R:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
// CHECK: %[[P:.*]] = tfm.linear %[[R]], %arg1 : (tensor<64x16xf32>, tensor<4x16xf32>) -> tensor<64x4xf32>
// CHECK: tensor.expand_shape %[[P]]
// CHECK-NOT: tfm.image_windows
func.func @pointwise(%x: tensor<8x8x16xf32>, %w: tensor<4x16xf32>) -> tensor<8x8x4xf32> {
  %y = tfm.conv2d %x, %w {kernel = 1 : i64, padding = array<i64: 0, 0, 0, 0>, stride = 1 : i64} : (tensor<8x8x16xf32>, tensor<4x16xf32>) -> tensor<8x8x4xf32>
  return %y : tensor<8x8x4xf32>
}

// -----

// Windows past 64 MiB go in bands of output rows: 256 columns of 576
// values take 113 rows a band (113, 113, 30), each band's input rows
// sliced with the padding left at its ends, multiplied, then joined.
// CHECK-LABEL: func.func @bands
// CHECK: %[[S0:.*]] = tensor.extract_slice %arg0[0, 0, 0] [114, 256, 64] [1, 1, 1]
// CHECK: %[[W0:.*]] = tfm.image_windows %[[S0]] {kernel = 3 : i64, padding = array<i64: 1, 1, 0, 1>, stride = 1 : i64} : tensor<114x256x64xf32> -> tensor<28928x576xf32>
// CHECK: %[[P0:.*]] = tfm.linear %[[W0]], %arg1 bias %arg2
// CHECK: %[[S1:.*]] = tensor.extract_slice %arg0[112, 0, 0] [115, 256, 64] [1, 1, 1]
// CHECK: tfm.image_windows %[[S1]] {kernel = 3 : i64, padding = array<i64: 0, 1, 0, 1>, stride = 1 : i64} : tensor<115x256x64xf32> -> tensor<28928x576xf32>
// CHECK: %[[S2:.*]] = tensor.extract_slice %arg0[225, 0, 0] [31, 256, 64] [1, 1, 1]
// CHECK: tfm.image_windows %[[S2]] {kernel = 3 : i64, padding = array<i64: 0, 1, 1, 1>, stride = 1 : i64} : tensor<31x256x64xf32> -> tensor<7680x576xf32>
// CHECK: %[[J:.*]] = tensor.concat dim(0) %[[P0]], %{{.*}}, %{{.*}} : (tensor<28928x64xf32>, tensor<28928x64xf32>, tensor<7680x64xf32>) -> tensor<65536x64xf32>
// CHECK: tensor.expand_shape %[[J]]
func.func @bands(%x: tensor<256x256x64xf32>, %w: tensor<64x576xf32>, %b: tensor<64xf32>) -> tensor<256x256x64xf32> {
  %y = tfm.conv2d %x, %w bias %b {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<256x256x64xf32>, tensor<64x576xf32>, tensor<64xf32>) -> tensor<256x256x64xf32>
  return %y : tensor<256x256x64xf32>
}

// -----

// A batch's windows are one GEMM's rows: the weight is read once for both
// images.
// CHECK-LABEL: func.func @batch
// CHECK: %[[W:.*]] = tfm.image_windows %arg0 {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<2x8x8x16xf32> -> tensor<128x144xf32>
// CHECK: %[[P:.*]] = tfm.linear %[[W]], %arg1 bias %arg2 : (tensor<128x144xf32>, tensor<32x144xf32>, tensor<32xf32>) -> tensor<128x32xf32>
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1, 2], [3]] output_shape [2, 8, 8, 32] : tensor<128x32xf32> into tensor<2x8x8x32xf32>
// CHECK-NOT: tfm.conv2d
func.func @batch(%x: tensor<2x8x8x16xf32>, %w: tensor<32x144xf32>, %b: tensor<32xf32>) -> tensor<2x8x8x32xf32> {
  %y = tfm.conv2d %x, %w bias %b {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<2x8x8x16xf32>, tensor<32x144xf32>, tensor<32xf32>) -> tensor<2x8x8x32xf32>
  return %y : tensor<2x8x8x32xf32>
}

// -----

// CHECK-LABEL: func.func @batch_pointwise
// CHECK: %[[R:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2], [3]] : tensor<2x8x8x16xf32> into tensor<128x16xf32>
// CHECK: tfm.linear %[[R]], %arg1 : (tensor<128x16xf32>, tensor<4x16xf32>) -> tensor<128x4xf32>
func.func @batch_pointwise(%x: tensor<2x8x8x16xf32>, %w: tensor<4x16xf32>) -> tensor<2x8x8x4xf32> {
  %y = tfm.conv2d %x, %w {kernel = 1 : i64, padding = array<i64: 0, 0, 0, 0>, stride = 1 : i64} : (tensor<2x8x8x16xf32>, tensor<4x16xf32>) -> tensor<2x8x8x4xf32>
  return %y : tensor<2x8x8x4xf32>
}

// -----

// A batch whose windows pass 64 MiB: image by image, each in the bands
// above, the products joined in the batch's row order.
// CHECK-LABEL: func.func @batch_bands
// CHECK: %[[I0:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 256, 256, 64] [1, 1, 1, 1] : tensor<2x256x256x64xf32> to tensor<256x256x64xf32>
// CHECK: tensor.extract_slice %[[I0]][0, 0, 0] [114, 256, 64] [1, 1, 1]
// CHECK-COUNT-3: tfm.image_windows
// CHECK: %[[I1:.*]] = tensor.extract_slice %arg0[1, 0, 0, 0] [1, 256, 256, 64] [1, 1, 1, 1] : tensor<2x256x256x64xf32> to tensor<256x256x64xf32>
// CHECK: tensor.extract_slice %[[I1]][0, 0, 0] [114, 256, 64] [1, 1, 1]
// CHECK-COUNT-3: tfm.image_windows
// CHECK: %[[J:.*]] = tensor.concat dim(0) {{.*}} -> tensor<131072x64xf32>
// CHECK: tensor.expand_shape %[[J]] {{\[\[}}0, 1, 2], [3]] output_shape [2, 256, 256, 64]
func.func @batch_bands(%x: tensor<2x256x256x64xf32>, %w: tensor<64x576xf32>, %b: tensor<64xf32>) -> tensor<2x256x256x64xf32> {
  %y = tfm.conv2d %x, %w bias %b {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<2x256x256x64xf32>, tensor<64x576xf32>, tensor<64xf32>) -> tensor<2x256x256x64xf32>
  return %y : tensor<2x256x256x64xf32>
}
