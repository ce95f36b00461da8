package dev.crucible.api.io;

import dev.crucible.api.tensor.DType;
import java.util.Arrays;
import java.util.stream.Collectors;

/** safetensors' dtype spellings; {@link DType}'s constant names are the same strings. */
final class SafetensorsDTypes {
    private SafetensorsDTypes() {
    }

    /** The DType called {@code name} in a header, or null when Crucible has none by that name. */
    static DType fromName(String name) {
        for (DType dtype : DType.values()) {
            if (dtype.name().equals(name)) {
                return dtype;
            }
        }
        return null;
    }

    static String nameOf(DType dtype) {
        return dtype.name();
    }

    static String supportedNames() {
        return Arrays.stream(DType.values()).map(DType::name).collect(Collectors.joining(", "));
    }
}
