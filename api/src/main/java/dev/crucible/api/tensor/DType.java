package dev.crucible.api.tensor;

import java.util.Locale;

/** Element types Crucible reads, computes in and writes. Names follow safetensors. */
public enum DType {
    F32(4), F16(2), BF16(2), I64(8), I32(4), I8(1), U8(1), BOOL(1);

    private final int byteSize;

    DType(int byteSize) {
        this.byteSize = byteSize;
    }

    public int byteSize() {
        return byteSize;
    }

    public boolean isFloatingPoint() {
        return this == F32 || this == F16 || this == BF16;
    }

    /** The user-facing spelling used by {@code --dtype}: float32, bfloat16, float16. */
    public String userName() {
        return switch (this) {
            case F32 -> "float32";
            case F16 -> "float16";
            case BF16 -> "bfloat16";
            default -> name().toLowerCase(Locale.ROOT);
        };
    }
}
