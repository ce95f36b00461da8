module @accumulate_donated {
  func.func public @main(%acc: tensor<2x3xf32> {tf.aliasing_output = 0 : i32}, %x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
    %0 = stablehlo.add %acc, %x : tensor<2x3xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    return %0, %1 : tensor<2x3xf32>, tensor<f32>
  }
}
