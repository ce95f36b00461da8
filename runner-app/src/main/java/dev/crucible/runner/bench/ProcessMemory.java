package dev.crucible.runner.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * This process's resident memory as Linux reports it in {@code /proc/self/status}: the current size (VmRSS) and
 * the high-water mark (VmHWM). The mark can be reset to the current size by writing {@code 5} to
 * {@code /proc/self/clear_refs}, so a benchmark can leave its own scratch buffers out of a model's peak.
 * Elsewhere every reading is empty.
 */
public final class ProcessMemory {
    private static final Path STATUS = Path.of("/proc/self/status");
    private static final Path CLEAR_REFS = Path.of("/proc/self/clear_refs");

    private ProcessMemory() {
    }

    /** Peak resident bytes since the process started or the last {@link #resetPeak()}. */
    public static OptionalLong peakResidentBytes() {
        return field("VmHWM:");
    }

    public static OptionalLong residentBytes() {
        return field("VmRSS:");
    }

    /** Sets the peak back to the current resident size; false where the kernel does not allow it. */
    public static boolean resetPeak() {
        try {
            Files.writeString(CLEAR_REFS, "5");
            return true;
        } catch (IOException | SecurityException | UnsupportedOperationException e) {
            return false;
        }
    }

    /**
     * Resident anonymous memory on transparent huge pages ({@code AnonHugePages} of {@code /proc/self/smaps_rollup}):
     * where the weights' pages are huge, one core's streaming reads run faster (see the CPU backend's notes).
     */
    public static OptionalLong hugePageBytes() {
        return field(Path.of("/proc/self/smaps_rollup"), "AnonHugePages:");
    }

    private static OptionalLong field(String name) {
        return field(STATUS, name);
    }

    private static OptionalLong field(Path file, String name) {
        try {
            for (String line : Files.readAllLines(file)) {
                if (line.startsWith(name)) {
                    // "VmHWM:     123456 kB"
                    String[] parts = line.substring(name.length()).trim().split("\\s+");
                    return OptionalLong.of(Long.parseLong(parts[0]) * 1024);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or a kernel without the field
        }
        return OptionalLong.empty();
    }
}
