package dev.crucible.runner.cli;

import com.github.freva.asciitable.AsciiTable;
import com.github.freva.asciitable.Column;
import com.github.freva.asciitable.HorizontalAlign;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.runner.Host;
import dev.crucible.runner.backends.ProbedBackend;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "devices", mixinStandardHelpOptions = true,
        description = "List every hardware backend with its priority, status, reason and devices.")
public final class DevicesCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Option(names = "--json", description = "Print a JSON array: id, priority, available, reason, devices, origin, details.")
    boolean json;

    @Option(names = "--device", paramLabel = "DEVICE",
            description = "Also resolve DEVICE (auto, cpu, cuda, cuda:N, xla, tpu, mps, xpu) and print which backend a run would use; exit 2 when it is not available.")
    String device;

    DevicesCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        List<ProbedBackend> backends = host.backends();
        if (device != null) {
            ProbedBackend chosen = host.resolve(DeviceRequest.parse(device));
            if (json) {
                out.println(Json.write(toJson(chosen)));
            } else {
                out.println("--device " + device + " -> " + chosen.id() + ": " + chosen.probe().reason());
            }
            return 0;
        }
        if (json) {
            out.println(Json.write(backends.stream().map(DevicesCommand::toJson).toList()));
            return 0;
        }
        out.println(AsciiTable.getTable(AsciiTable.BASIC_ASCII_NO_DATA_SEPARATORS, backends, List.of(
                new Column().header("backend").dataAlign(HorizontalAlign.LEFT).with(ProbedBackend::id),
                new Column().header("priority").dataAlign(HorizontalAlign.RIGHT).with(p -> Integer.toString(p.backend().priority())),
                new Column().header("status").dataAlign(HorizontalAlign.LEFT).with(p -> p.probe().available() ? "available" : "unavailable"),
                new Column().header("devices").dataAlign(HorizontalAlign.LEFT).with(p -> devices(p.probe().devices())),
                new Column().header("reason").dataAlign(HorizontalAlign.LEFT).maxWidth(70).with(p -> p.probe().reason()))));
        return 0;
    }

    static Map<String, Object> toJson(ProbedBackend p) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("id", p.id());
        o.put("priority", p.backend().priority());
        o.put("available", p.probe().available());
        o.put("reason", p.probe().reason());
        List<Map<String, Object>> devices = new ArrayList<>();
        for (DeviceInfo d : p.probe().devices()) {
            Map<String, Object> device = new LinkedHashMap<>();
            device.put("index", d.index());
            device.put("name", d.name());
            device.put("memory_bytes", d.memoryBytes().isPresent() ? d.memoryBytes().getAsLong() : null);
            devices.add(device);
        }
        o.put("devices", devices);
        o.put("origin", p.origin());
        o.put("details", p.probe().details());
        return o;
    }

    private static String devices(List<DeviceInfo> devices) {
        if (devices.isEmpty()) {
            return "-";
        }
        List<String> parts = new ArrayList<>();
        for (DeviceInfo d : devices) {
            parts.add(d.index() + ": " + d.name() + (d.memoryBytes().isPresent() ? " (" + gib(d.memoryBytes().getAsLong()) + ")" : ""));
        }
        return String.join("; ", parts);
    }

    static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
    }
}
