package dev.crucible.api.tensor;


/** {@link TensorOps#dequantize}'s default, composed of the other ops, one method per format. */
final class ComposedDequantization {

    private ComposedDequantization() {
    }

    static Tensor nf4(TensorOps ops, QuantizedTensor weight, WeightFormat.Nf4 nf4) {
        long[] shape = weight.shape();
        long count = elements(shape);
        long blocks = nf4.blocks(shape);
        Tensor levels = ops.embedding(weight.codebook(), ops.cast(weight.data(), DType.I64));
        Tensor scaled = ops.mul(ops.reshape(levels, blocks, nf4.blockSize()), ops.reshape(weight.scales(), blocks, 1));
        Tensor flat = ops.reshape(scaled, blocks * nf4.blockSize());
        if (count != blocks * nf4.blockSize()) {
            flat = ops.slice(flat, 0, 0, count);
        }
        return ops.cast(ops.reshape(flat, shape), weight.dtype());
    }

    /**
     * {@code (q - zero) · scale} per row or block: 8-bit codes cast to float32, 4-bit ones looked up in the codebook
     * (both nibbles of a byte in one row of it). Blocks that divide the row reshape the codes into
     * {@code [rows, groups, block]}; otherwise each column's scale is gathered by its group index.
     */
    static Tensor integers(TensorOps ops, QuantizedTensor weight, WeightFormat.Int format) {
        long[] shape = weight.shape();
        long columns = shape.length == 0 ? 1 : shape[shape.length - 1];
        long rows = elements(shape) / columns;
        long groups = format.groupsPerRow(columns);
        Tensor codes;
        if (format.bits() == 8) {
            codes = ops.cast(weight.data(), DType.F32);
        } else {
            long rowBytes = format.rowBytes(columns);
            Tensor pairs = ops.embedding(weight.codebook(), ops.cast(weight.data(), DType.I64));
            codes = ops.reshape(pairs, rows, 2 * rowBytes);
            if (2 * rowBytes != columns) {
                codes = ops.slice(codes, 1, 0, columns);
            }
        }
        Tensor scales = weight.scales();
        Tensor zeros = weight.zeroPoints() == null ? null : ops.cast(weight.zeroPoints(), DType.F32);
        Tensor values;
        if (groups == 1 || columns % format.blockSize() == 0) {
            long block = columns / groups;
            Tensor grouped = ops.reshape(codes, rows, groups, block);
            if (zeros != null) {
                grouped = ops.add(grouped, ops.neg(ops.reshape(zeros, rows, groups, 1)));
            }
            values = ops.reshape(ops.mul(grouped, ops.reshape(scales, rows, groups, 1)), rows, columns);
        } else {
            long[] groupOfColumn = new long[Math.toIntExact(columns)];
            for (int column = 0; column < groupOfColumn.length; column++) {
                groupOfColumn[column] = column / format.blockSize();
            }
            Tensor index = ops.constant(groupOfColumn, columns);
            if (zeros != null) {
                codes = ops.add(codes, ops.neg(perColumn(ops, zeros, index)));
            }
            values = ops.mul(codes, perColumn(ops, scales, index));
        }
        return ops.cast(ops.reshape(values, shape), weight.dtype());
    }

    /** {@code [rows, groups]} spread to {@code [rows, columns]} by each column's group. */
    private static Tensor perColumn(TensorOps ops, Tensor byGroup, Tensor index) {
        return ops.transpose(ops.embedding(ops.transpose(byGroup, 0, 1), index), 0, 1);
    }

    private static long elements(long[] shape) {
        long count = 1;
        for (long extent : shape) {
            count *= extent;
        }
        return count;
    }
}
