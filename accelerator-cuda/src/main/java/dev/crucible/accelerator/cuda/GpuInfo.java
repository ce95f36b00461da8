package dev.crucible.accelerator.cuda;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * One NVIDIA GPU as the driver describes it, before any CUDA runtime is loaded.
 *
 * @param index             the CUDA device index ({@code cuda:N})
 * @param name              e.g. {@code NVIDIA H200}
 * @param totalBytes        device memory; empty where only {@code /proc} was read
 * @param freeBytes         memory free now; empty where unknown
 * @param computeCapability e.g. {@code 90} for 9.0; 0 where unknown
 */
record GpuInfo(int index, String name, OptionalLong totalBytes, OptionalLong freeBytes, int computeCapability) {
    GpuInfo {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(totalBytes, "totalBytes is null");
        Objects.requireNonNull(freeBytes, "freeBytes is null");
    }

    /** bfloat16 runs natively from compute capability 8.0 (Ampere) on; a GPU of unknown capability is assumed to. */
    boolean computesBf16() {
        return computeCapability == 0 || computeCapability >= 80;
    }

    /** {@code 9.0}, or {@code unknown}. */
    String capability() {
        return computeCapability == 0 ? "unknown" : computeCapability / 10 + "." + computeCapability % 10;
    }
}
