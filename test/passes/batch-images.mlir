// RUN: tfm-opt %s -split-input-file -tfm-batch-images | FileCheck %s

// An image classifier: @classify_batch takes [images, C, H, W] and runs
// @classify's body once per image in an scf.for, each result row i of
// [images, labels]; the weights are taken once, before the loop.
// CHECK-LABEL: func.func @classify(
// CHECK-LABEL: func.func @classify_batch(
// CHECK-SAME: %[[IMAGES:[^:]*]]: tensor<?x3x8x8xf32> {tfm.input = #tfm.input<features>})
// CHECK-SAME: -> (tensor<?x5xf32> {tfm.output = #tfm.output<logits>})
// CHECK-DAG: %[[W:.*]] = tfm.weight @proj : tensor<4x48xf32>
// CHECK-DAG: %[[HEAD:.*]] = tfm.weight @head : tensor<5x4xf32>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[N:.*]] = tensor.dim %[[IMAGES]], %[[C0]]
// CHECK: %[[INIT:.*]] = tensor.empty(%[[N]]) : tensor<?x5xf32>
// CHECK: %[[OUT:.*]] = scf.for %[[I:.*]] = %[[C0]] to %[[N]] step %[[C1]] iter_args(%[[ROWS:.*]] = %[[INIT]]) -> (tensor<?x5xf32>) {
// CHECK:   %[[IMAGE:.*]] = tensor.extract_slice %[[IMAGES]][%[[I]], 0, 0, 0] [1, 3, 8, 8] [1, 1, 1, 1] : tensor<?x3x8x8xf32> to tensor<3x8x8xf32>
// CHECK:   %[[P:.*]] = tfm.patches %[[IMAGE]]
// CHECK:   tfm.linear %[[P]], %[[W]]
// CHECK:   %[[LOGITS:.*]] = tensor.extract_slice
// CHECK:   %[[NEXT:.*]] = tensor.insert_slice %[[LOGITS]] into %[[ROWS]][%[[I]], 0] [1, 5] [1, 1] : tensor<5xf32> into tensor<?x5xf32>
// CHECK:   scf.yield %[[NEXT]]
// CHECK: return %[[OUT]] : tensor<?x5xf32>
module {
  tfm.weight_decl @proj : tensor<4x48xf32>
  tfm.weight_decl @head : tensor<5x4xf32>
  func.func @classify(%pixels: tensor<3x8x8xf32> {tfm.input = #tfm.input<features>}) -> (tensor<5xf32> {tfm.output = #tfm.output<logits>}) {
    %p = tfm.patches %pixels {patch = 4 : i64} : tensor<3x8x8xf32> -> tensor<4x48xf32>
    %w = tfm.weight @proj : tensor<4x48xf32>
    %x = tfm.linear %p, %w : (tensor<4x48xf32>, tensor<4x48xf32>) -> tensor<4x4xf32>
    %h = tfm.weight @head : tensor<5x4xf32>
    %l = tfm.linear %x, %h : (tensor<4x4xf32>, tensor<5x4xf32>) -> tensor<4x5xf32>
    %r = tensor.extract_slice %l[0, 0] [1, 5] [1, 1] : tensor<4x5xf32> to tensor<5xf32>
    return %r : tensor<5xf32>
  }
}

// -----

// A vision encoder's [tokens, d] result becomes [images, tokens, d].
// CHECK-LABEL: func.func @encode_batch(
// CHECK-SAME: -> (tensor<?x4x4xf32> {tfm.output = #tfm.output<hidden_states>})
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<4x4xf32> into tensor<?x4x4xf32>
module {
  tfm.weight_decl @proj : tensor<4x48xf32>
  func.func @encode(%pixels: tensor<3x8x8xf32> {tfm.input = #tfm.input<features>}) -> (tensor<4x4xf32> {tfm.output = #tfm.output<hidden_states>}) {
    %p = tfm.patches %pixels {patch = 4 : i64} : tensor<3x8x8xf32> -> tensor<4x48xf32>
    %w = tfm.weight @proj : tensor<4x48xf32>
    %x = tfm.linear %p, %w : (tensor<4x48xf32>, tensor<4x48xf32>) -> tensor<4x4xf32>
    return %x : tensor<4x4xf32>
  }
}

// -----

// Left alone: text entry points (tfm-pack-sequences batches those),
// private functions, and functions that already have a batch twin.
// CHECK-NOT: func.func @{{.*}}_batch_batch
// CHECK-NOT: func.func @embed_batch
// CHECK-NOT: func.func @helper_batch
module {
  func.func @embed(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?xi32> {tfm.output = #tfm.output<embedding>}) {
    return %tokens : tensor<?xi32>
  }
  func.func private @helper(%pixels: tensor<3x8x8xf32> {tfm.input = #tfm.input<features>}) -> (tensor<3x8x8xf32> {tfm.output = #tfm.output<logits>}) {
    return %pixels : tensor<3x8x8xf32>
  }
  func.func @classify(%pixels: tensor<3x8x8xf32> {tfm.input = #tfm.input<features>}) -> (tensor<3x8x8xf32> {tfm.output = #tfm.output<logits>}) {
    return %pixels : tensor<3x8x8xf32>
  }
  func.func @classify_batch(%pixels: tensor<?x3x8x8xf32> {tfm.input = #tfm.input<features>}) -> (tensor<?x3x8x8xf32> {tfm.output = #tfm.output<logits>}) {
    return %pixels : tensor<?x3x8x8xf32>
  }
}
