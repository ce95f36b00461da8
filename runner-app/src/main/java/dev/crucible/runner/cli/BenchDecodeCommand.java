package dev.crucible.runner.cli;

import com.github.freva.asciitable.AsciiTable;
import com.github.freva.asciitable.Column;
import com.github.freva.asciitable.HorizontalAlign;
import dev.crucible.api.UserInputException;
import dev.crucible.runner.Host;
import dev.crucible.runner.bench.DecodeBenchReport;
import dev.crucible.runner.bench.DecodeBenchmark;
import dev.crucible.runner.bench.LlamaBench;
import dev.crucible.runner.bench.ProcessMemory;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.torch.TorchRuntime;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "decode", mixinStandardHelpOptions = true,
        description = {"Prefill and greedy decode speed of a model, and this machine's ceilings measured in the same "
                + "run (a large matmul in the model's dtype, a streaming memory read), interleaved with the model runs. "
                + "Reports tokens/s, their ratios to the ceilings (decode at batch 1 against bandwidth; prefill and "
                + "batched decode against matmul) and peak resident memory against the weights.",
                "Example: runner bench decode --model /tmp/qwen-shaped --batch 1 --prompt-len 128 --new-tokens 64 --json"})
public final class BenchDecodeCommand implements Callable<Integer> {
    /** English text the prompts are cut from; any model's tokenizer turns it into ordinary ids. */
    private static final String PROMPT_SOURCE = "The old lighthouse keeper climbed the spiral stairs every evening, "
            + "counting the steps as his father had taught him, and wrote the weather, the ships and the color of "
            + "the sea into a book that nobody else ever read. One winter a storm broke the lamp, and he kept a fire "
            + "burning on the gallery all night so that the fishing boats could find the harbor. ";

    private final Host host;

    @Spec
    CommandSpec spec;

    @Mixin
    ModelOptions modelOptions;

    @Option(names = "--batch", defaultValue = "1", paramLabel = "B", description = "Prompts decoded together (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--prompt-len", defaultValue = "128", paramLabel = "P", description = "Tokens per prompt (default: ${DEFAULT-VALUE}).")
    int promptLength;

    @Option(names = "--new-tokens", defaultValue = "64", paramLabel = "N", description = "Tokens generated per prompt, at least 2 (default: ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--rounds", defaultValue = "3", paramLabel = "R", description = "Timed runs, each between two ceiling measurements; medians are reported (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--ceiling-seconds", defaultValue = "2", paramLabel = "S", description = "Seconds per ceiling measurement, split between matmul and memory read (default: ${DEFAULT-VALUE}).")
    double ceilingSeconds;

    @Option(names = "--compare-gguf", paramLabel = "FILE", description = "The same model as a GGUF file (runner convert "
            + "--model M --to gguf writes one), run by --llama-bench in every round between the same ceilings as ours.")
    java.nio.file.Path compareGguf;

    @Option(names = "--llama-bench", paramLabel = "PATH", description = "llama.cpp's llama-bench executable, for "
            + "--compare-gguf: it runs -p P -n N-1 -d 0,P -r 1 with our thread count, and the table shows both and "
            + "the ratios, round by round.")
    java.nio.file.Path llamaBench;

    @Option(names = "--json", description = "Print the result as one JSON object.")
    boolean json;

    BenchDecodeCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        if (batch < 1 || promptLength < 1 || rounds < 1) {
            throw new UserInputException("--batch, --prompt-len and --rounds must be at least 1");
        }
        if (newTokens < 2) {
            throw new UserInputException("--new-tokens must be at least 2 (the first token ends the prefill), got " + newTokens);
        }
        if (!(ceilingSeconds > 0)) {
            throw new UserInputException("--ceiling-seconds must be positive, got " + ceilingSeconds);
        }
        if ((compareGguf == null) != (llamaBench == null)) {
            throw new UserInputException("--compare-gguf and --llama-bench go together: the GGUF file of the model and "
                    + "the llama-bench that runs it");
        }
        if (compareGguf != null && batch != 1) {
            throw new UserInputException("--compare-gguf compares batch-1 decode (llama-bench decodes one sequence); "
                    + "drop --batch " + batch);
        }
        // Checked before the model loads; the thread count is fixed once the session says what each op runs on.
        java.util.Optional<LlamaBench> checked = compareGguf == null ? java.util.Optional.empty()
                : java.util.Optional.of(LlamaBench.of(llamaBench, compareGguf, 1, promptLength, newTokens));
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (modelOptions.model != null && (modelOptions.model.startsWith("/") || modelOptions.model.startsWith("."))) {
            // A local folder that is not there is the one-line error alone, not after a progress line.
            ModelSession.resolveModel(host, modelOptions.model);
        }
        err.println("bench: loading " + modelOptions.model);
        try (ModelSession session = modelOptions.open(host)) {
            session.quantizationReport().forEach(err::println);
            long needed = (long) promptLength + newTokens;
            if (needed > session.config().contextLength()) {
                throw new UserInputException(String.format(Locale.ROOT,
                        "--prompt-len + --new-tokens is %,d tokens, more than %s; shorten them", needed,
                        session.config().describeContext()));
            }
            DecodeBenchmark.Settings settings = new DecodeBenchmark.Settings(batch, promptLength, newTokens, rounds,
                    Duration.ofMillis(Math.round(ceilingSeconds * 1000)));
            int[] source = session.tokenizer().encodeWithoutSpecialTokens(PROMPT_SOURCE);
            int threadCount = threadsPerOp(session);
            java.util.Optional<LlamaBench> peer = checked.map(bench -> bench.withThreads(threadCount));
            DecodeBenchReport report = new DecodeBenchmark(session, line -> err.println("bench: " + line))
                    .run(settings, source, session.tokenizer().padId(), peer);
            Map<String, Object> result = report.toJson(modelOptions.model, threadCount, notes());
            if (json) {
                out.println(Json.write(result));
            } else {
                printTable(out, report, result);
            }
        }
        return 0;
    }

    /**
     * The threads each op of the benchmark ran on, as the runtime reports them (a small model on the CPU runs batches
     * side by side with one thread each, so a one-row benchmark uses one thread whatever {@code --threads} says).
     */
    private static int threadsPerOp(ModelSession session) {
        String reported = session.backend().runtimeDetails().getOrDefault("threads", "");
        java.util.regex.Matcher intraOp = java.util.regex.Pattern.compile("^(\\d+) intra-op").matcher(reported);
        if (intraOp.find()) {
            return Integer.parseInt(intraOp.group(1));
        }
        OptionalInt asked = session.threads();
        return asked.isPresent() ? asked.getAsInt() : Runtime.getRuntime().availableProcessors();
    }

    private void printTable(PrintWriter out, DecodeBenchReport report, Map<String, Object> result) {
        out.printf(Locale.ROOT, "%s  %s  batch %d, prompt %d, %d new tokens, %d rounds, %s threads%n", modelOptions.model,
                result.get("dtype"), batch, promptLength, newTokens, rounds, result.get("threads"));
        out.println(AsciiTable.getTable(AsciiTable.BASIC_ASCII_NO_DATA_SEPARATORS, report.table(), List.of(
                new Column().header("").dataAlign(HorizontalAlign.LEFT).with(row -> row[0]),
                new Column().header("measured").dataAlign(HorizontalAlign.RIGHT).with(row -> row[1]),
                new Column().header("work rate").dataAlign(HorizontalAlign.RIGHT).with(row -> row[2]),
                new Column().header("against the ceiling").dataAlign(HorizontalAlign.LEFT).with(row -> row[3]))));
        out.println("environment: " + result.get("env"));
    }

    /**
     * Whether the Vector API module is defined: in the boot layer ({@code --add-modules}) or in the child layer the
     * cpu backend loads it into, which {@code ModuleLayer.boot()} does not list; its classes belong to the boot loader
     * either way.
     */
    private static boolean vectorApiLoaded() {
        try {
            Class.forName("jdk.incubator.vector.Vector", false, null);
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    /** The bracketed choice of {@code /sys/kernel/mm/transparent_hugepage/enabled}, e.g. "madvise". */
    private static String transparentHugePagePolicy() {
        try {
            String line = java.nio.file.Files.readString(java.nio.file.Path.of("/sys/kernel/mm/transparent_hugepage/enabled"));
            java.util.regex.Matcher chosen = java.util.regex.Pattern.compile("\\[(\\w+)]").matcher(line);
            return chosen.find() ? chosen.group(1) : "unknown";
        } catch (java.io.IOException | RuntimeException e) {
            return "unknown";
        }
    }

    /** What in the environment changes these numbers, so a reader can reproduce them. */
    private Map<String, String> notes() {
        Map<String, String> notes = new LinkedHashMap<>();
        for (String name : List.of("OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CRUCIBLE_THREADS")) {
            notes.put(name, host.environment().get(name).orElse("unset"));
        }
        // TorchRuntime sets PASSIVE where the user did not (idle OpenMP threads stop spinning on OpenBLAS's cores).
        notes.put("OMP_WAIT_POLICY", host.environment().get("OMP_WAIT_POLICY")
                .orElse(TorchRuntime.setOpenMpWaitPolicy() ? "PASSIVE (Crucible's default)" : "unset"));
        notes.put("jdk.incubator.vector", vectorApiLoaded() ? "loaded" : "not loaded");
        // Weights on 2 MiB pages stream faster from one core; the kernel's policy decides whether advice is heard.
        ProcessMemory.hugePageBytes().ifPresent(bytes -> notes.put("huge_pages",
                String.format(Locale.ROOT, "%.0f MiB resident (transparent_hugepage %s)", bytes / 1048576.0,
                        transparentHugePagePolicy())));
        notes.put("java", System.getProperty("java.version"));
        return notes;
    }
}
