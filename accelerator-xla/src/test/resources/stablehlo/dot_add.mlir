module @dot_add {
  func.func public @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = stablehlo.add %0, %b : tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
}
