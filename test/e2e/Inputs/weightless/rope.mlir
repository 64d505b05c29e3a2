// A module of one entry point that reads no weights: tfm.rope with
// sections over a row's three positions, given flat as token ids.
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 1000, max_context = 16, bos_token = -1, eos_token = -1, add_bos = false, hidden_size = 16, num_layers = 1, num_heads = 2, num_kv_heads = 2>} {
  func.func @rope(%x: tensor<?x2x8xf32> {tfm.input = #tfm.input<features>}, %flat: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x2x8xf32> {tfm.output = #tfm.output<hidden_states>}) {
    %c0 = arith.constant 0 : index
    %rows = tensor.dim %x, %c0 : tensor<?x2x8xf32>
    %thw = tensor.expand_shape %flat [[0, 1]] output_shape [%rows, 3] : tensor<?xi32> into tensor<?x3xi32>
    %0 = tfm.rope rotate_half %x, %thw {theta = 1.0e2 : f32, sections = array<i64: 1, 2, 1>} : tensor<?x2x8xf32>, tensor<?x3xi32>
    return %0 : tensor<?x2x8xf32>
  }
}
