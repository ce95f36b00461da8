package dev.crucible.accelerator.xla;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.backend.Probe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Detection against stand-in file trees: a machine with nothing, with a TPU but no libtpu, with plugins. */
class XlaBackendTest {
    @TempDir
    Path temp;

    private Path pci(String vendor, String device) throws Exception {
        Path dir = Files.createDirectories(temp.resolve("pci/0000:00:04.0"));
        Files.writeString(dir.resolve("vendor"), vendor + "\n");
        Files.writeString(dir.resolve("device"), device + "\n");
        return temp.resolve("pci");
    }

    private Probe probe(Map<String, String> env, Path pci, List<Path> sites) {
        return new XlaBackend(new PjrtPluginLocator(env, pci, sites), env).detect();
    }

    @Test
    void nothingInstalledSaysWhatToSet() {
        Probe p = probe(Map.of(), temp.resolve("no-pci"), List.of());
        assertFalse(p.available());
        assertEquals("no PJRT plugin found: set PJRT_PLUGIN_LIBRARY_PATH or TPU_LIBRARY_PATH", p.reason());
    }

    @Test
    void tpuOnThePciBusWithoutLibtpu() throws Exception {
        Probe p = probe(Map.of(), pci("0x1ae0", "0x0063"), List.of());
        assertEquals("a TPU v5e PCI device is present but libtpu is missing: pip install libtpu or set TPU_LIBRARY_PATH", p.reason());
        assertEquals("1 x TPU v5e", p.details().get("tpu_chips"));
    }

    @Test
    void otherPciVendorsAreNotTpus() throws Exception {
        Probe p = probe(Map.of(), pci("0x10de", "0x2330"), List.of());
        assertTrue(p.reason().startsWith("no PJRT plugin found"));
    }

    @Test
    void configuredPluginPathIsCheckedAndTheTpuAliasFollowsThePlatform() throws Exception {
        Path missing = temp.resolve("nope.so");
        Probe bad = probe(Map.of("PJRT_PLUGIN_LIBRARY_PATH", missing.toString()), temp.resolve("no-pci"), List.of());
        assertTrue(bad.reason().contains("PJRT_PLUGIN_LIBRARY_PATH=" + missing + " does not exist"), bad.reason());

        Path site = Files.createDirectories(temp.resolve("site-packages"));
        Path cuda = Files.createDirectories(site.resolve("jax_plugins/xla_cuda13")).resolve("xla_cuda_plugin.so");
        Files.writeString(cuda, "");
        XlaBackend gpu = new XlaBackend(new PjrtPluginLocator(Map.of(), temp.resolve("no-pci"), List.of(site)), Map.of());
        Probe gpuProbe = gpu.detect();
        assertEquals(cuda.toString(), gpuProbe.details().get("plugin"));
        assertFalse(gpu.answersTo("tpu", gpuProbe), "a CUDA PJRT plugin is not a TPU");

        Path libtpu = Files.createDirectories(site.resolve("libtpu")).resolve("libtpu.so");
        Files.writeString(libtpu, "");
        XlaBackend tpu = new XlaBackend(new PjrtPluginLocator(Map.of(), temp.resolve("no-pci"), List.of(site)), Map.of());
        Probe tpuProbe = tpu.detect();
        assertEquals(libtpu.toString(), tpuProbe.details().get("plugin"));
        assertTrue(tpu.answersTo("tpu", tpuProbe));
        // Neither can run here, so neither may capture --device auto.
        assertFalse(tpuProbe.available());
        assertEquals("libtpu found, no TPU chip: compile-only", tpuProbe.reason());
        assertFalse(gpuProbe.available());
        assertEquals("the JAX CUDA PJRT plugin is installed (" + cuda + ") but no NVIDIA GPU is on the PCI bus",
                gpuProbe.reason());
    }

    @Test
    void theJaxCudaPluginRunsWhereAnNvidiaGpuIsOnTheBus() throws Exception {
        Path site = Files.createDirectories(temp.resolve("site-packages"));
        Path cuda = Files.createDirectories(site.resolve("jax_plugins/xla_cuda13")).resolve("xla_cuda_plugin.so");
        Files.writeString(cuda, "");
        Path gpu = pci("0x10de", "0x2330");
        Files.writeString(gpu.resolve("0000:00:04.0/class"), "0x030200\n");
        Probe p = probe(Map.of(), gpu, List.of(site));
        assertTrue(p.available(), p.reason());
        assertEquals("JAX CUDA PJRT plugin, 1 NVIDIA GPU", p.reason());
        assertEquals("other PJRT device", p.details().get("platform"));
    }

    @Test
    void aPluginTheUserNamedIsTakenAtItsWord() throws Exception {
        Path plugin = Files.writeString(temp.resolve("pjrt_c_api_cpu_plugin.so"), "");
        Probe p = probe(Map.of("PJRT_PLUGIN_LIBRARY_PATH", plugin.toString()), temp.resolve("no-pci"), List.of());
        assertTrue(p.available(), p.reason());
        assertEquals("PJRT plugin pjrt_c_api_cpu_plugin.so (PJRT_PLUGIN_LIBRARY_PATH)", p.reason());
    }

    @Test
    void libtpuWithAChipIsNotCompileOnly() throws Exception {
        Path site = Files.createDirectories(temp.resolve("site-packages"));
        Path libtpu = Files.createDirectories(site.resolve("libtpu")).resolve("libtpu.so");
        Files.writeString(libtpu, "");
        Probe p = probe(Map.of(), pci("0x1ae0", "0x006f"), List.of(site));
        assertTrue(p.available());
        assertEquals("libtpu, 1 x TPU v6e", p.reason());
        assertEquals(1, p.devices().size());
        assertEquals("1 x TPU v6e", p.details().get("tpu_chips"));
    }

    @Test
    void clientOptionsAreShownTypedAndAMalformedValueIsAProblemNotAThrow() throws Exception {
        Path plugin = Files.writeString(temp.resolve("libtpu.so"), "");
        Probe ok = probe(Map.of("TPU_LIBRARY_PATH", plugin.toString(),
                "CRUCIBLE_PJRT_OPTIONS", "preallocate=false;memory_fraction=0.7"), temp.resolve("no-pci"), List.of());
        assertEquals("preallocate=false;memory_fraction=0.7", ok.details().get("client_options"));
        Probe bad = probe(Map.of("TPU_LIBRARY_PATH", plugin.toString(), "CRUCIBLE_PJRT_OPTIONS", "preallocate"),
                temp.resolve("no-pci"), List.of());
        assertEquals("libtpu found, no TPU chip: compile-only", bad.reason());
        assertTrue(bad.details().get("problem").startsWith("CRUCIBLE_PJRT_OPTIONS: 'preallocate' is not name=value"));
    }
}
