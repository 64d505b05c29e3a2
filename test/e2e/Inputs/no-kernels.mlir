// A module whose one function computes nothing: the CUDA pipeline gives it
// no kernels (cuda-emulator.test).
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
