package dev.crucible.accelerator.xla;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Finds a PJRT plugin library and TPU chips without loading anything.
 *
 * <p>Where plugins live: {@code PJRT_PLUGIN_LIBRARY_PATH} (any plugin), {@code TPU_LIBRARY_PATH}, the
 * {@code libtpu} Python package ({@code site-packages/libtpu/libtpu.so}), and the JAX CUDA plugin wheel
 * ({@code site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so}, or {@code xla_cuda12}). TPU chips show up as
 * PCI devices with vendor {@code 0x1ae0} before any driver library is touched.
 */
final class PjrtPluginLocator {

    /** A plugin we found: where, how we found it, and whether it drives TPUs. */
    record Plugin(Path library, String source, boolean tpu) { }

    /** A TPU chip seen on the PCI bus. */
    record TpuChip(String pciAddress, String generation) { }

    private final Map<String, String> env;
    private final Path sysPciDevices;
    private final List<Path> sitePackages;

    PjrtPluginLocator(Map<String, String> env, Path sysPciDevices, List<Path> sitePackages) {
        this.env = env;
        this.sysPciDevices = sysPciDevices;
        this.sitePackages = sitePackages;
    }

    static PjrtPluginLocator system() {
        return new PjrtPluginLocator(System.getenv(), Path.of("/sys/bus/pci/devices"), defaultSitePackages(System.getenv()));
    }

    /** The first plugin found, in the order of the class comment; a configured path that is missing is reported. */
    Optional<Plugin> findPlugin(List<String> problems) {
        Optional<Plugin> configured = fromEnv("PJRT_PLUGIN_LIBRARY_PATH", problems);
        if (configured.isPresent()) {
            return configured;
        }
        Optional<Plugin> tpu = fromEnv("TPU_LIBRARY_PATH", problems);
        if (tpu.isPresent()) {
            return tpu;
        }
        for (Path site : sitePackages) {
            Path libtpu = site.resolve("libtpu").resolve("libtpu.so");
            if (Files.isRegularFile(libtpu)) {
                return Optional.of(new Plugin(libtpu, "libtpu package", true));
            }
        }
        for (Path site : sitePackages) {
            for (String cuda : List.of("xla_cuda13", "xla_cuda12")) {
                Path plugin = site.resolve("jax_plugins").resolve(cuda).resolve("xla_cuda_plugin.so");
                if (Files.isRegularFile(plugin)) {
                    return Optional.of(new Plugin(plugin, "jax-" + cuda.replace("xla_", "") + "-pjrt package", false));
                }
            }
        }
        return Optional.empty();
    }

    private Optional<Plugin> fromEnv(String variable, List<String> problems) {
        String value = env.get(variable);
        if (value == null || value.isBlank()) {
            return Optional.empty();
        }
        Path path = Path.of(value.trim());
        if (!Files.isRegularFile(path)) {
            problems.add(variable + "=" + value + " does not exist");
            return Optional.empty();
        }
        boolean tpu = variable.startsWith("TPU") || path.getFileName().toString().contains("tpu");
        return Optional.of(new Plugin(path, variable, tpu));
    }

    /** TPU chips on the PCI bus (vendor 0x1ae0 is Google), with the generation their device id tells. */
    List<TpuChip> findTpuChips() {
        List<TpuChip> chips = new ArrayList<>();
        try (Stream<Path> devices = Files.list(sysPciDevices)) {
            for (Path device : devices.sorted().toList()) {
                if (!"0x1ae0".equals(read(device.resolve("vendor")))) {
                    continue;
                }
                String generation = switch (read(device.resolve("device"))) {
                    case "0x0027" -> "TPU v2/v3";
                    case "0x005e" -> "TPU v4";
                    case "0x0063" -> "TPU v5e";
                    case "0x0062" -> "TPU v5p";
                    case "0x006f" -> "TPU v6e";
                    default -> "TPU";
                };
                chips.add(new TpuChip(device.getFileName().toString(), generation));
            }
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
        return chips;
    }

    /**
     * NVIDIA display or 3D controllers on the PCI bus (vendor {@code 0x10de}, class {@code 0x03}): what the JAX CUDA
     * plugin would run on, seen without loading a driver library.
     */
    int countNvidiaGpus() {
        int gpus = 0;
        try (Stream<Path> devices = Files.list(sysPciDevices)) {
            for (Path device : devices.toList()) {
                if ("0x10de".equals(read(device.resolve("vendor"))) && read(device.resolve("class")).startsWith("0x03")) {
                    gpus++;
                }
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return gpus;
    }

    private static String read(Path file) {
        try {
            return Files.readString(file).trim();
        } catch (IOException e) {
            return "";
        }
    }

    private static List<Path> defaultSitePackages(Map<String, String> env) {
        List<Path> roots = new ArrayList<>();
        String venv = env.get("VIRTUAL_ENV");
        if (venv != null) {
            roots.add(Path.of(venv, "lib"));
        }
        String conda = env.get("CONDA_PREFIX");
        if (conda != null) {
            roots.add(Path.of(conda, "lib"));
        }
        roots.add(Path.of(System.getProperty("user.home"), ".local", "lib"));
        roots.add(Path.of("/usr/local/lib"));
        roots.add(Path.of("/usr/lib"));
        roots.add(Path.of("/opt/conda/lib"));
        List<Path> sites = new ArrayList<>();
        for (Path root : roots) {
            try (Stream<Path> pythons = Files.list(root)) {
                for (Path python : pythons.filter(p -> p.getFileName().toString().startsWith("python3")).sorted().toList()) {
                    sites.add(python.resolve("site-packages"));
                    sites.add(python.resolve("dist-packages"));
                }
            } catch (IOException | RuntimeException e) {
                // no Python under this root
            }
        }
        return sites;
    }
}
