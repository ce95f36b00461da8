package dev.crucible.runner.cli;

import com.github.freva.asciitable.AsciiTable;
import com.github.freva.asciitable.Column;
import com.github.freva.asciitable.ColumnData;
import com.github.freva.asciitable.HorizontalAlign;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.LoweringReport;
import dev.crucible.api.backend.LoweringRequest;
import dev.crucible.api.backend.ProgramLowering;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.StagedFolder;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.runner.Host;
import dev.crucible.runner.backends.ProbedBackend;
import dev.crucible.runner.finetune.MethodChoice;
import dev.crucible.runner.session.ModelSession;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import dev.crucible.api.quant.QuantizationConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "lower", mixinStandardHelpOptions = true,
        description = {"Write the StableHLO programs (and a manifest for each) that a run of the model at this shape "
                + "compiles on an XLA device, and compile them for a TPU topology where a PJRT plugin can do that "
                + "without a chip (libtpu can): each program's compile time and per-device memory, known before "
                + "renting a TPU.",
                "Example: runner lower --model ./my-model --batch 16 --prompt-len 128 --new-tokens 100 --devices 8 --out programs/"})
public final class LowerCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Option(names = "--model", required = true, paramLabel = "M",
            description = "A model folder, or org/name[@revision] from the Hugging Face cache or hub.")
    String model;

    @Option(names = "--batch", paramLabel = "B", defaultValue = "8", description = "Prompts per batch (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--prompt-len", paramLabel = "P", defaultValue = "128",
            description = "Tokens per prompt, padding included; the xla backend rounds it up to a multiple of 32 slots, as a run does (default: ${DEFAULT-VALUE}).")
    int promptLength;

    @Option(names = "--new-tokens", paramLabel = "N", defaultValue = "100",
            description = "Tokens generated per prompt: the decode window is P + N - 1 slots, rounded up to a multiple of 32 (default: ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--devices", paramLabel = "N", defaultValue = "1",
            description = "Devices one program is split over; 1 keeps it whole (default: ${DEFAULT-VALUE}).")
    int devices;

    @Option(names = "--strategy", paramLabel = "S", defaultValue = "fsdp",
            description = "How a split lays the model out: fsdp (weights split along their first dimension, the KV cache along the batch) (default: ${DEFAULT-VALUE}).")
    String strategy;

    @Option(names = "--topology", paramLabel = "NAME", defaultValue = "",
            description = "The topology to compile for, as the plugin names them (default: the plugin's default; libtpu: 8 cores).")
    String topology;

    @Mixin
    QuantizationOptions quantizationOptions;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "The folder to create with the programs and manifests.")
    Path out;

    @Option(names = "--force", description = "Replace DIR when it exists.")
    boolean force;

    @Option(names = "--json", description = "Print the report as JSON.")
    boolean json;

    LowerCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        positive("--batch", batch);
        positive("--prompt-len", promptLength);
        positive("--new-tokens", newTokens);
        positive("--devices", devices);
        if (!strategy.equals("fsdp")) {
            throw new UserInputException("--strategy '" + strategy + "' is not one of: fsdp");
        }
        ProbedBackend lowering = host.backends().stream().filter(b -> b.backend() instanceof ProgramLowering).findFirst()
                .orElseThrow(() -> new UserInputException("no backend can lower programs here: the xla plugin "
                        + "(accelerator-xla) is not installed"));
        QuantizationConfig quantization = quantizationOptions.config();
        Path folder = ModelSession.resolveModel(host, model);
        ModelConfig config = ModelConfig.read(folder);
        DType dtype = lowering.backend().chooseDtype(config.dtype());
        LoweringReport[] report = new LoweringReport[1];
        QuantizationConfig[] kept = new QuantizationConfig[1];
        try (Checkpoint checkpoint = Checkpoint.open(folder)) {
            // As a run keeps them: a folder stored quantized (runner quantize) as stored unless another is asked for.
            kept[0] = quantization.enabled() ? quantization : checkpoint.storedQuantization();
            StagedFolder.write(out, force, 0, staging -> {
                try {
                    report[0] = ((ProgramLowering) lowering.backend()).lower(new LoweringRequest(config, checkpoint, dtype,
                            batch, promptLength, newTokens, devices, strategy, topology, staging, kept[0]),
                            lowering.probe());
                } catch (UncheckedIOException e) {
                    throw e.getCause();
                }
            });
        }
        print(report[0], config, dtype, kept[0]);
        return 0;
    }

    private void print(LoweringReport report, ModelConfig config, DType dtype, QuantizationConfig quantization) {
        PrintWriter stdout = spec.commandLine().getOut();
        String shape = String.format(Locale.ROOT, "batch %d x %d tokens + %d new, %s", batch, promptLength, newTokens,
                dtype.userName()) + (quantization.enabled() ? ", " + quantization.method().userName() + " weights" : "");
        if (json) {
            Map<String, Object> root = new LinkedHashMap<>();
            root.put("model", model);
            root.put("architecture", config.architecture().modelType());
            root.put("dtype", dtype.userName());
            root.put("quantization", quantization.describe());
            root.put("batch", batch);
            root.put("prompt_len", promptLength);
            root.put("new_tokens", newTokens);
            root.put("devices", devices);
            root.put("strategy", strategy);
            root.put("target", report.target());
            root.put("compiled", report.notCompiled().isEmpty());
            root.put("not_compiled", report.notCompiled().orElse(null));
            root.put("out", out.toString());
            List<Map<String, Object>> programs = new ArrayList<>();
            for (LoweringReport.Program program : report.programs()) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("name", program.name());
                entry.put("stablehlo", program.file());
                entry.put("manifest", program.manifest());
                entry.put("arguments", program.arguments());
                entry.put("partitions", program.partitions());
                entry.put("compile_seconds", program.compileTime().map(t -> t.toNanos() / 1e9).orElse(null));
                entry.put("memory_per_device", program.memory().map(m -> {
                    Map<String, Long> bytes = new LinkedHashMap<>();
                    bytes.put("code", m.code());
                    bytes.put("arguments", m.arguments());
                    bytes.put("outputs", m.outputs());
                    bytes.put("aliased", m.aliased());
                    bytes.put("temporaries", m.temporaries());
                    bytes.put("total", m.total());
                    return bytes;
                }).orElse(null));
                programs.add(entry);
            }
            root.put("programs", programs);
            stdout.println(Json.write(root));
            return;
        }
        stdout.println("lowered " + model + " (" + config.architecture().modelType() + ", " + shape + ") for "
                + report.target() + (devices > 1 ? ", " + strategy : ""));
        List<ColumnData<LoweringReport.Program>> columns = new ArrayList<>();
        columns.add(column("program", HorizontalAlign.LEFT, LoweringReport.Program::name));
        columns.add(column("devices", HorizontalAlign.RIGHT, p -> Integer.toString(p.partitions())));
        columns.add(column("arguments", HorizontalAlign.RIGHT, p -> Integer.toString(p.arguments())));
        if (report.notCompiled().isEmpty()) {
            columns.add(column("compile", HorizontalAlign.RIGHT,
                    p -> p.compileTime().map(t -> String.format(Locale.ROOT, "%.2f s", t.toNanos() / 1e9)).orElse("-")));
            columns.add(memoryColumn("argument memory", LoweringReport.DeviceMemory::arguments));
            columns.add(memoryColumn("outputs", LoweringReport.DeviceMemory::outputs));
            columns.add(memoryColumn("temporaries", LoweringReport.DeviceMemory::temporaries));
            columns.add(memoryColumn("total per device", LoweringReport.DeviceMemory::total));
        }
        stdout.println(AsciiTable.getTable(AsciiTable.BASIC_ASCII_NO_DATA_SEPARATORS, report.programs(), columns));
        report.notCompiled().ifPresent(stdout::println);
        stdout.println("wrote " + out + ": " + report.programs().size() + " programs (.mlir) with manifests (.manifest.json)");
    }

    private static ColumnData<LoweringReport.Program> column(String header, HorizontalAlign align, Function<LoweringReport.Program, String> value) {
        return new Column().header(header).dataAlign(align).with(value);
    }

    private static ColumnData<LoweringReport.Program> memoryColumn(String header, Function<LoweringReport.DeviceMemory, Long> bytes) {
        return column(header, HorizontalAlign.RIGHT, p -> p.memory().map(m -> MethodChoice.size(bytes.apply(m))).orElse("-"));
    }

    private static void positive(String option, int value) {
        if (value < 1) {
            throw new UserInputException(option + " must be at least 1, got " + value);
        }
    }
}
