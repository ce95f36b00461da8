package dev.crucible.accelerator.xla.pjrt;

import dev.crucible.api.tensor.DType;

/** {@code PJRT_Buffer_Type} numbers for Crucible's dtypes (the enum's order in the header). */
final class ElementTypes {
    private ElementTypes() {
    }

    static int code(DType dtype) {
        return switch (dtype) {
            case BOOL -> 1;  // PRED
            case I8 -> 2;
            case I32 -> 4;
            case I64 -> 5;
            case U8 -> 6;
            case F16 -> 10;
            case F32 -> 11;
            case BF16 -> 13;
        };
    }

    static DType dtype(int code) {
        for (DType dtype : DType.values()) {
            if (code(dtype) == code) {
                return dtype;
            }
        }
        throw new IllegalStateException("PJRT element type " + code + " has no Crucible dtype");
    }
}
