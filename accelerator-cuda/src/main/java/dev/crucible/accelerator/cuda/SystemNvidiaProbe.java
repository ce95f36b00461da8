package dev.crucible.accelerator.cuda;

import dev.crucible.api.backend.DeviceInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads the NVIDIA kernel driver's {@code /proc} files and, when installed, {@code nvidia-smi}. */
final class SystemNvidiaProbe implements CudaBackend.NvidiaProbe {
    private static final Path DRIVER_VERSION = Path.of("/proc/driver/nvidia/version");
    private static final Path GPUS = Path.of("/proc/driver/nvidia/gpus");
    private static final Pattern VERSION = Pattern.compile("Kernel Module\\s+(?:for \\S+\\s+)?(\\d+[.\\d]*)");

    @Override
    public Result probe() {
        if (!Files.isReadable(DRIVER_VERSION)) {
            return new Result(Optional.empty(), List.of(), DRIVER_VERSION + " not found");
        }
        String version = "unknown version";
        try {
            Matcher m = VERSION.matcher(Files.readString(DRIVER_VERSION));
            if (m.find()) {
                version = m.group(1);
            }
        } catch (IOException e) {
            // keep "unknown version": the driver is there, its banner is not readable
        }
        List<DeviceInfo> gpus = fromNvidiaSmi();
        if (gpus.isEmpty()) {
            gpus = fromProc();
        }
        return new Result(Optional.of(version), gpus, DRIVER_VERSION.toString());
    }

    /** Names and memory from nvidia-smi, bounded to a few seconds; empty when it is absent or fails. */
    private static List<DeviceInfo> fromNvidiaSmi() {
        List<DeviceInfo> out = new ArrayList<>();
        try {
            Process p = new ProcessBuilder("nvidia-smi", "--query-gpu=index,name,memory.total",
                    "--format=csv,noheader,nounits").redirectErrorStream(true).start();
            if (!p.waitFor(3, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return List.of();
            }
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                return List.of();
            }
            for (String line : text.split("\n")) {
                String[] parts = line.split(",");
                if (parts.length == 3) {
                    long mib = Long.parseLong(parts[2].trim());
                    out.add(DeviceInfo.of(Integer.parseInt(parts[0].trim()), parts[1].trim(), mib * 1024 * 1024));
                }
            }
        } catch (IOException | RuntimeException e) {
            return List.of();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of();
        }
        return out;
    }

    /** One entry per GPU folder the driver publishes; memory is not in there. */
    private static List<DeviceInfo> fromProc() {
        List<DeviceInfo> out = new ArrayList<>();
        try (var dirs = Files.list(GPUS)) {
            for (Path gpu : dirs.sorted().toList()) {
                String name = "NVIDIA GPU " + gpu.getFileName();
                try {
                    for (String line : Files.readAllLines(gpu.resolve("information"))) {
                        if (line.startsWith("Model:")) {
                            name = line.substring("Model:".length()).trim();
                        }
                    }
                } catch (IOException ignored) {
                    // keep the generic name
                }
                out.add(DeviceInfo.of(out.size(), name, 0));
            }
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
        return out;
    }

    @Override
    public boolean hasGpuNatives() {
        // A resource lookup, not a load: the natives jar is only inspected.
        return CudaBackend.class.getClassLoader().getResource(CudaBackend.GPU_NATIVES) != null;
    }
}
