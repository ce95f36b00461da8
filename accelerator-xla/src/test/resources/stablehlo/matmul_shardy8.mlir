module @matmul_shardy8 attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=8]>
  func.func public @main(%x: tensor<64x128xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                         %w: tensor<128x256xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})
      -> (tensor<64x256xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16>
    return %0 : tensor<64x256xbf16>
  }
}
