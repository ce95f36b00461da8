package dev.crucible.torch;

import dev.crucible.api.tensor.DType;
import org.bytedeco.pytorch.global.torch.ScalarType;

/** DType and libtorch ScalarType, both ways. */
final class TorchTypes {
    private TorchTypes() {
    }

    static ScalarType scalarType(DType dtype) {
        return switch (dtype) {
            case F32 -> ScalarType.Float;
            case F16 -> ScalarType.Half;
            case BF16 -> ScalarType.BFloat16;
            case I64 -> ScalarType.Long;
            case I32 -> ScalarType.Int;
            case I8 -> ScalarType.Char;
            case U8 -> ScalarType.Byte;
            case BOOL -> ScalarType.Bool;
        };
    }

    /**
     * The DType of a libtorch type. Compares {@code value}s, not constants: enums that JavaCPP returns from native
     * code are fresh instances carrying only their {@code value} (no name, ordinal 0), so {@code ==} and
     * {@code switch} on them silently pick the wrong case.
     */
    static DType dtype(ScalarType type) {
        for (DType dtype : DType.values()) {
            if (scalarType(dtype).value == type.value) {
                return dtype;
            }
        }
        throw new IllegalStateException("libtorch type " + type + " has no Crucible dtype");
    }
}
