package dev.crucible.accelerator.cuda;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;

/**
 * {@code nvidia-smi}'s CSV query, for a machine whose NVML cannot be opened from here (it is what the tool reads,
 * so this mostly helps where the library sits outside the linker's paths); bounded to a few seconds. Empty when the
 * tool is absent or fails.
 */
final class NvidiaSmi {
    private NvidiaSmi() {
    }

    static List<GpuInfo> query() {
        try {
            Process p = new ProcessBuilder("nvidia-smi", "--query-gpu=index,name,memory.total,memory.free,compute_cap",
                    "--format=csv,noheader,nounits").redirectErrorStream(true).start();
            if (!p.waitFor(3, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return List.of();
            }
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return p.exitValue() == 0 ? parse(text) : List.of();
        } catch (IOException | RuntimeException e) {
            return List.of();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of();
        }
    }

    /** Lines of {@code index, name, MiB total, MiB free, major.minor}; a malformed line ends the list empty. */
    static List<GpuInfo> parse(String csv) {
        List<GpuInfo> out = new ArrayList<>();
        for (String line : csv.strip().split("\n")) {
            String[] parts = line.split(",");
            if (parts.length != 5) {
                return List.of();
            }
            try {
                String[] capability = parts[4].strip().split("\\.");
                out.add(new GpuInfo(Integer.parseInt(parts[0].strip()), parts[1].strip(),
                        OptionalLong.of(Long.parseLong(parts[2].strip()) << 20),
                        OptionalLong.of(Long.parseLong(parts[3].strip()) << 20),
                        10 * Integer.parseInt(capability[0]) + Integer.parseInt(capability[1])));
            } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
                return List.of();
            }
        }
        return out;
    }
}
