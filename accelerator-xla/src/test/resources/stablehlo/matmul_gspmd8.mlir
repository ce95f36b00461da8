module @matmul_gspmd8 attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<64x128xbf16> {mhlo.sharding = "{devices=[8,1]<=[8]}"},
                         %w: tensor<128x256xbf16> {mhlo.sharding = "{replicated}"})
      -> (tensor<64x256xbf16> {mhlo.sharding = "{devices=[8,1]<=[8]}"}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16>
    return %0 : tensor<64x256xbf16>
  }
}
