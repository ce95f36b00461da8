package dev.crucible.accelerator.cpu;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * Makes the JDK Vector API ({@code jdk.incubator.vector}) available to the {@link
 * dev.crucible.accelerator.cpu.kernels.VectorKernels kernels} while the JVM runs, instead of at its start.
 *
 * <p>Why not {@code --add-modules jdk.incubator.vector}: the JDK prints {@code WARNING: Using incubator modules:
 * jdk.incubator.vector} to stderr whenever an incubator module is resolved into the boot layer
 * ({@code jdk.internal.module.ModuleBootstrap.checkIncubatingStatus}, before {@code main}; no option turns it off),
 * and it would be the first line of every command. The check covers the boot layer only. The public API cannot
 * define the module in a child layer of ours: {@code ModuleLayer.defineModules} refuses the boot loader ("loader
 * can't be 'null' or the platform class loader") and {@code defineModulesWithOneLoader} refuses any other ("Class
 * loader must be the boot class loader"), and only boot-loader classes get the JVM's trusted annotations
 * ({@code @ForceInline}, {@code @IntrinsicCandidate}) that make the API fast. {@code
 * jdk.internal.module.Modules.loadModule} is the JDK's own way to add a module to a running VM (it loads
 * {@code java.instrument} for agents attached late): it defines the module to its built-in (boot) loader in a child
 * layer and adds {@code java.base}'s qualified exports to it, and HotSpot switches on its vector intrinsics
 * ({@code EnableVectorSupport}) when the module is defined. A dot product measured both ways ran at the same speed.
 * It needs {@code --add-exports java.base/jdk.internal.module=ALL-UNNAMED}, which {@code ./runner} passes and which
 * prints nothing. Filtering stderr instead would make it a pipe, and progress lines are redrawn in place only on a
 * terminal.
 *
 * <p>A JVM started with {@code --add-modules jdk.incubator.vector} has the module already; without either option, or
 * on a runtime without the module, the backend runs libtorch's kernels and says why.
 */
final class VectorApiModule {
    static final String NAME = "jdk.incubator.vector";
    private static final String EXPORT = "--add-exports java.base/jdk.internal.module=ALL-UNNAMED";

    /** Whether the kernels can run, and if not, why (a clause for the backend's "kernels" line). */
    record Availability(boolean loaded, String reason) {
    }

    private static final Availability AVAILABILITY = load();

    private VectorApiModule() {
    }

    /** Loaded once per process, on first use (defining a module takes a few milliseconds and no native code). */
    static Availability availability() {
        return AVAILABILITY;
    }

    private static Availability load() {
        if (ModuleLayer.boot().findModule(NAME).isEmpty()) {
            try {
                Method loadModule = Class.forName("jdk.internal.module.Modules").getMethod("loadModule", String.class);
                loadModule.invoke(null, NAME);
            } catch (IllegalAccessException e) {
                return new Availability(false, "start java with " + EXPORT + ", as ./runner does, for the faster decode kernels");
            } catch (InvocationTargetException e) {
                return new Availability(false, "this Java runtime cannot load " + NAME + ": " + e.getCause());
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                return new Availability(false, "Java " + Runtime.version().feature() + " cannot load " + NAME
                        + " at run time (" + e + "); start java with --add-modules " + NAME);
            }
        }
        try {
            // The kernels' own loader (a plugin's, when run from the plugins folder) must see the API.
            Class.forName("jdk.incubator.vector.FloatVector", true, VectorApiModule.class.getClassLoader());
            return new Availability(true, "");
        } catch (ClassNotFoundException | LinkageError e) {
            return new Availability(false, NAME + " is not visible to the cpu backend: " + e);
        }
    }
}
