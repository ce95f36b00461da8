package dev.crucible.accelerator.cuda;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * What the NVIDIA kernel module publishes under {@code /proc/driver/nvidia}: its version, and one folder per GPU
 * whose {@code information} file names the model. Plain files, so reading them loads nothing; memory and compute
 * capability are not in there.
 */
final class ProcDriver {
    private static final Pattern VERSION = Pattern.compile("Kernel Module\\s+(?:for \\S+\\s+)?(\\d+[.\\d]*)");

    private final Path root;

    /** @param root the file-system root: {@code /} on a real machine, a fake tree in tests */
    ProcDriver(Path root) {
        this.root = root;
    }

    Path versionFile() {
        return root.resolve("proc/driver/nvidia/version");
    }

    /** The kernel module's version (e.g. {@code 580.65.06}); empty when no NVIDIA driver is loaded. */
    Optional<String> version() {
        Path file = versionFile();
        if (!Files.isReadable(file)) {
            return Optional.empty();
        }
        try {
            Matcher m = VERSION.matcher(Files.readString(file));
            return Optional.of(m.find() ? m.group(1) : "of unknown version");
        } catch (IOException e) {
            return Optional.of("of unknown version");
        }
    }

    /** The driver's major version (580 of 580.65.06), 0 when it cannot be read. */
    static int major(String version) {
        Matcher m = Pattern.compile("^(\\d+)").matcher(version);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    /**
     * One entry per GPU folder, in bus order (the order CUDA numbers devices in by default), named by the
     * {@code Model:} line of its {@code information} file.
     */
    List<GpuInfo> gpus() {
        List<GpuInfo> out = new ArrayList<>();
        try (Stream<Path> folders = Files.list(root.resolve("proc/driver/nvidia/gpus"))) {
            for (Path gpu : folders.sorted().toList()) {
                String name = "NVIDIA GPU at " + gpu.getFileName();
                try {
                    for (String line : Files.readAllLines(gpu.resolve("information"))) {
                        if (line.startsWith("Model:")) {
                            name = line.substring("Model:".length()).strip();
                        }
                    }
                } catch (IOException e) {
                    // keep the bus address as its name
                }
                out.add(new GpuInfo(out.size(), name, OptionalLong.empty(), OptionalLong.empty(), 0));
            }
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
        return out;
    }
}
