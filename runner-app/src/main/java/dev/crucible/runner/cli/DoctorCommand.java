package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.runner.Host;
import dev.crucible.runner.backends.ActiveBackend;
import dev.crucible.runner.backends.ProbedBackend;
import dev.crucible.runner.version.Version;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Print what Crucible sees: Java, OS, CPU features, libtorch, plugins, backends and the "
                + "environment variables that change its behaviour (secrets masked).")
public final class DoctorCommand implements Callable<Integer> {
    /** Variables that steer Crucible, Hugging Face, PJRT and the native thread pools. */
    private static final Pattern RELEVANT = Pattern.compile(
            "^(CRUCIBLE_.*|HF_.*|HUGGING_FACE_.*|PJRT_.*|TPU_.*|XLA_.*|CUDA_.*|NVIDIA_.*|PYTORCH_.*|TORCH_.*|OMP_.*|MKL_.*|OPENBLAS_.*|JAVA_HOME|JAVA_TOOL_OPTIONS|LD_LIBRARY_PATH)$");
    private static final Pattern SECRET = Pattern.compile("(?i).*(TOKEN|SECRET|PASSWORD|KEY|AUTH|CREDENTIAL).*");

    private final Host host;

    @Spec
    CommandSpec spec;

    DoctorCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        out.println("crucible " + Version.current());
        out.println();
        out.println("Java     " + Runtime.version() + " (" + System.getProperty("java.vendor") + ") at " + System.getProperty("java.home"));
        out.println("OS       " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        out.println("Memory   JVM max heap " + DevicesCommand.gib(Runtime.getRuntime().maxMemory()));
        out.println();
        out.println("Backends (highest priority first):");
        for (ProbedBackend p : host.backends()) {
            out.printf(Locale.ROOT, "  %-5s priority %-3d %-11s %s [%s]%n", p.id(), p.backend().priority(),
                    p.probe().available() ? "available" : "unavailable", p.probe().reason(), p.origin());
            p.probe().details().forEach((k, v) -> out.printf(Locale.ROOT, "        %-14s %s%n", k, v));
        }
        out.println();
        out.println("libtorch " + LibtorchInfo.describe());
        runtime(out);
        out.println();
        out.println("Plugins folder " + host.plugins().pluginsDir().map(Object::toString).orElse("(none: running from classes)"));
        host.plugins().loadedPlugins().forEach(p -> out.println("  loaded  " + p));
        host.plugins().problems().forEach(p -> out.println("  problem " + p));
        out.println();
        out.println("Environment:");
        Map<String, String> relevant = new TreeMap<>();
        host.environment().env().forEach((k, v) -> {
            if (RELEVANT.matcher(k).matches()) {
                relevant.put(k, mask(k, v));
            }
        });
        if (relevant.isEmpty()) {
            out.println("  (none of CRUCIBLE_*, HF_*, PJRT_*, TPU_*, CUDA_*, OMP_*, OPENBLAS_* ... is set)");
        }
        relevant.forEach((k, v) -> out.println("  " + k + "=" + v));
        return 0;
    }

    /** The runtime of the backend --device auto would use, loaded now (detection never loads it). */
    private void runtime(PrintWriter out) {
        ProbedBackend chosen;
        try {
            chosen = host.resolve(DeviceRequest.AUTO);
        } catch (UserInputException e) {
            out.println("Runtime  none: " + e.getMessage());
            return;
        }
        try {
            Map<String, String> details = ActiveBackend.setUp(chosen, DeviceRequest.AUTO, OptionalInt.empty())
                    .runtimeDetails();
            out.println("Runtime  " + chosen.id() + (details.isEmpty() ? " (no native runtime to describe)" : ":"));
            details.forEach((k, v) -> out.printf(Locale.ROOT, "        %-14s %s%n", k, v));
        } catch (RuntimeException | LinkageError e) {
            out.println("Runtime  " + chosen.id() + " failed to load: " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** Secrets are shown as their length only: enough to tell "set" from "empty" without leaking them. */
    static String mask(String name, String value) {
        if (SECRET.matcher(name).matches()) {
            return value.isEmpty() ? "(empty)" : "****** (" + value.length() + " characters, masked)";
        }
        return value;
    }
}
