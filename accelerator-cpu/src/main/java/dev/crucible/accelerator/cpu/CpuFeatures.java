package dev.crucible.accelerator.cpu;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;

/**
 * The facts about this CPU that change how we compute: the model name, memory, and the ISA extensions that
 * libtorch's kernels (and ours) dispatch on. Read from {@code /proc} on Linux without loading anything native;
 * elsewhere the features are unknown and the policy falls back to float32.
 *
 * @param modelName  e.g. "Intel(R) Xeon(R) Platinum 8481C"
 * @param cores      processors available to this JVM
 * @param memoryBytes MemTotal, empty when unknown
 * @param flags      the lower-case feature flags the kernel reports
 */
public record CpuFeatures(String modelName, int cores, OptionalLong memoryBytes, Set<String> flags) {

    public CpuFeatures {
        flags = Set.copyOf(flags);
    }

    public boolean avx2() {
        return flags.contains("avx2");
    }

    public boolean avx512() {
        return flags.contains("avx512f");
    }

    /** AVX512-BF16 (vdpbf16ps) or AMX-BF16 tiles, or Arm's BF16 extension: bf16 dot products in hardware. */
    public boolean nativeBf16() {
        return flags.contains("avx512_bf16") || flags.contains("amx_bf16") || flags.contains("bf16");
    }

    public boolean amx() {
        return flags.contains("amx_tile");
    }

    /** The features that matter for our kernels, in a stable order, e.g. "AVX2, AVX-512, AVX512-BF16". */
    public List<String> notableFeatures() {
        List<String> out = new ArrayList<>();
        if (avx2()) {
            out.add("AVX2");
        }
        if (avx512()) {
            out.add("AVX-512");
        }
        if (flags.contains("avx512_bf16")) {
            out.add("AVX512-BF16");
        }
        if (flags.contains("avx512_vnni")) {
            out.add("AVX512-VNNI");
        }
        if (amx()) {
            out.add("AMX" + (flags.contains("amx_bf16") ? "-BF16" : ""));
        }
        if (flags.contains("asimd")) {
            out.add("NEON");
        }
        if (flags.contains("bf16")) {
            out.add("BF16");
        }
        return out;
    }

    /** Probes this machine. Never throws: missing or unreadable files just mean "unknown". */
    public static CpuFeatures probe() {
        return fromProcFiles(Path.of("/proc/cpuinfo"), Path.of("/proc/meminfo"), Runtime.getRuntime().availableProcessors());
    }

    static CpuFeatures fromProcFiles(Path cpuinfo, Path meminfo, int cores) {
        String model = System.getProperty("os.arch", "unknown") + " CPU";
        Set<String> flags = new TreeSet<>();
        for (String line : readLines(cpuinfo)) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String key = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = line.substring(colon + 1).trim();
            switch (key) {
                case "model name" -> model = value;
                // x86 reports "flags", arm64 "Features"; one processor's list is enough (they are identical).
                case "flags", "features" -> {
                    if (flags.isEmpty()) {
                        for (String flag : value.split("\\s+")) {
                            if (!flag.isEmpty()) {
                                flags.add(flag.toLowerCase(Locale.ROOT));
                            }
                        }
                    }
                }
                default -> { }
            }
        }
        OptionalLong memory = OptionalLong.empty();
        for (String line : readLines(meminfo)) {
            if (line.startsWith("MemTotal:")) {
                String[] parts = line.substring("MemTotal:".length()).trim().split("\\s+");
                try {
                    memory = OptionalLong.of(Long.parseLong(parts[0]) * 1024L);
                } catch (NumberFormatException ignored) {
                    // leave unknown
                }
            }
        }
        return new CpuFeatures(model, cores, memory, flags);
    }

    private static List<String> readLines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }
}
