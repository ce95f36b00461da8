package dev.crucible.torch.train;

import dev.crucible.api.model.DType;
import dev.crucible.torch.TorchOps;
import dev.crucible.torch.TorchTensor;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * 4-bit NormalFloat (NF4) as QLoRA defines it: each block of 64 consecutive weights (row-major) is divided by its
 * largest magnitude, and each result in [-1, 1] is stored as the index of the nearest of 16 fixed levels, two
 * indices per byte (first element in the high nibble). Dequantizing multiplies a level by its block's absmax.
 * The levels are quantiles of a standard normal, normalized to [-1, 1], with an exact zero: weights are roughly
 * normal, so each level is about equally likely, which is what makes 4 bits go far.
 *
 * <p>Everything runs as libtorch ops on the weight's device; absmax values are kept in float32 (no double
 * quantization: it saves another 0.4 bits per weight, which matters only for very large models).
 */
public final class Nf4 {

    /** Elements per absmax block. */
    public static final int BLOCK = 64;

    /** The 16 NF4 levels, ascending (QLoRA, appendix E; bitsandbytes' table). */
    static final float[] LEVELS = {
        -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
        -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
        0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
        0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

    private Nf4() {
    }

    /** The levels, a copy. */
    public static float[] levels() {
        return LEVELS.clone();
    }

    /** The levels as a float32 device tensor, retained: the lookup table every weight of a model shares. */
    public static TorchTensor table(TorchOps ops) {
        return (TorchTensor) ops.retain(ops.constant(LEVELS, LEVELS.length));
    }

    /**
     * Quantizes {@code weight} (any floating dtype, any shape) into a new {@link Nf4Weight} that dequantizes to
     * {@code computeDtype} through {@code table} (see {@link #table}). The blocks are retained by {@code ops}; the
     * weight's owner releases them.
     */
    public static Nf4Weight quantize(TorchOps ops, dev.crucible.api.tensor.Tensor weight, DType computeDtype,
                                     TorchTensor table) {
        long count = 1;
        for (long extent : weight.shape()) {
            count *= extent;
        }
        long blocks = (count + BLOCK - 1) / BLOCK;
        org.bytedeco.pytorch.Tensor flat = handle(ops.cast(weight, DType.F32)).reshape(count);
        long padded = blocks * BLOCK;
        if (padded != count) {
            // The last block is completed with zeros, which quantize exactly to the zero level and are cut off again.
            TensorVector parts = new TensorVector(flat, handle(ops.zeros(DType.F32, padded - count)));
            flat = torch.cat(parts, 0);
        }
        org.bytedeco.pytorch.Tensor grouped = flat.reshape(blocks, BLOCK);
        org.bytedeco.pytorch.Tensor absmax = torch.amax(grouped.abs(), new long[] {1}, true);
        // An all-zero block divides by 1 instead of 0: every element then maps to the zero level.
        org.bytedeco.pytorch.Tensor divisor = torch.where(absmax.eq(new Scalar(0.0)), new Scalar(1.0), absmax);
        org.bytedeco.pytorch.Tensor normalized = grouped.div(divisor).reshape(padded);
        // Nearest level = number of midpoints below the value; a value exactly on a midpoint takes the lower level.
        org.bytedeco.pytorch.Tensor codes = torch.bucketize(normalized, handle(ops.constant(midpoints(), 15)),
                false, false).to(org.bytedeco.pytorch.global.torch.ScalarType.Byte);
        org.bytedeco.pytorch.Tensor pairs = codes.reshape(padded / 2, 2);
        org.bytedeco.pytorch.Tensor packed = pairs.select(1, 0).__lshift__(new Scalar(4L))
                .bitwise_or(pairs.select(1, 1));
        TorchTensor packedTensor = new TorchTensor(packed.contiguous());
        TorchTensor absmaxTensor = new TorchTensor(absmax.reshape(blocks).contiguous());
        ops.retain(packedTensor);
        ops.retain(absmaxTensor);
        return new Nf4Weight(weight.shape(), computeDtype, packedTensor, absmaxTensor, table);
    }

    /** The dense weight {@code q} stands for, in its compute dtype (a temporary of the current scope). */
    public static org.bytedeco.pytorch.Tensor dequantize(Nf4Weight q) {
        org.bytedeco.pytorch.Tensor packed = q.packed().handle();
        org.bytedeco.pytorch.Tensor high = packed.__rshift__(new Scalar(4L));
        org.bytedeco.pytorch.Tensor low = packed.bitwise_and(new Scalar(15L));
        TensorVector pair = new TensorVector(high, low);
        org.bytedeco.pytorch.Tensor codes = torch.stack(pair, 1).reshape(-1)
                .to(org.bytedeco.pytorch.global.torch.ScalarType.Long);
        long blocks = q.absmax().handle().size(0);
        org.bytedeco.pytorch.Tensor values = q.table().handle().index_select(0, codes).reshape(blocks, BLOCK)
                .mul(q.absmax().handle().reshape(blocks, 1));
        long count = q.elementCount();
        org.bytedeco.pytorch.Tensor flat = values.reshape(blocks * BLOCK);
        if (count != blocks * BLOCK) {
            flat = flat.narrow(0, 0, count);
        }
        return flat.reshape(q.shape()).to(Nf4Weight.scalarType(q.dtype()));
    }

    /** Bytes the quantized form takes: half a byte per weight plus a float32 absmax per block. */
    public static long storedBytes(long elements) {
        long blocks = (elements + BLOCK - 1) / BLOCK;
        return blocks * BLOCK / 2 + blocks * 4;
    }

    static float[] midpoints() {
        float[] mids = new float[LEVELS.length - 1];
        for (int i = 0; i < mids.length; i++) {
            mids[i] = (LEVELS[i] + LEVELS[i + 1]) / 2;
        }
        return mids;
    }

    private static org.bytedeco.pytorch.Tensor handle(dev.crucible.api.tensor.Tensor tensor) {
        return ((TorchTensor) tensor).handle();
    }
}
