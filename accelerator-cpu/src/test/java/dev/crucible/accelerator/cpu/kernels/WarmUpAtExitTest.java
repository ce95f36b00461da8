package dev.crucible.accelerator.cpu.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.tensor.DType;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The runner closes a plugin's class loader when it exits, also right after the kernels were made (a usage error
 * found once the model is open). The warm-up thread then cannot load its classes, and must end quietly: its stack
 * trace was a second line under the one-line error.
 */
class WarmUpAtExitTest {

    @Test
    void aWarmUpWhoseClassLoaderClosedEndsWithoutATrace() throws Exception {
        URL classes = VectorKernels.class.getProtectionDomain().getCodeSource().getLocation();
        ClassLoader hostOnly = new ClassLoader(getClass().getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.startsWith("dev.crucible.accelerator.")) {
                    throw new ClassNotFoundException(name);
                }
                return super.loadClass(name, resolve);
            }
        };
        List<Throwable> uncaught = new CopyOnWriteArrayList<>();
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((thread, e) -> uncaught.add(e));
        try {
            Class<?> kernels;
            Class<?> machineCode;
            try (URLClassLoader plugin = new URLClassLoader(new URL[] {classes}, hostOnly)) {
                kernels = Class.forName(VectorKernels.class.getName(), true, plugin);
                machineCode = Class.forName(MachineCode.class.getName(), false, plugin);
                // Every kernel class but the warm-up's own, which it loads only after the loader is closed.
                try (var files = Files.list(Path.of(classes.toURI()).resolve("dev/crucible/accelerator/cpu/kernels"))) {
                    for (Path file : files.toList()) {
                        String name = file.getFileName().toString();
                        if (!name.startsWith("WarmUp") && name.endsWith(".class")) {
                            Class.forName(VectorKernels.class.getPackageName() + "." + name.replace(".class", ""), false, plugin);
                        }
                    }
                }
            }
            Object made = kernels.getConstructor(int.class, List.class, machineCode)
                    .newInstance(1, List.of(DType.F32), null);
            for (Thread thread : Thread.getAllStackTraces().keySet()) {
                if (thread.getName().equals("crucible-cpu-kernel-warm-up")) {
                    thread.join(10_000);
                }
            }
            kernels.getMethod("close").invoke(made);
        } finally {
            Thread.setDefaultUncaughtExceptionHandler(previous);
        }
        assertEquals(List.of(), uncaught);
    }
}
