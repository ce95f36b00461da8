package dev.crucible.runner.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * llama.cpp's {@code llama-bench}, run by {@code runner bench decode --compare-gguf FILE --llama-bench PATH} between
 * Crucible's own rounds, so that both sides of the comparison see the same machine (this one's memory bandwidth
 * changes from second to second). One invocation per round measures what Crucible's round measures:
 * {@code -p P -n N-1 -d 0,P}: the prefill of P tokens from an empty context (depth 0), and N−1 decode steps after a
 * context of P tokens (depth P), which is where Crucible's decode steps start; the prefill at depth P that llama-bench
 * also runs is discarded. {@code -r 1}: the rounds are the repetitions; {@code -o json}: the numbers are read from
 * its JSON ({@code n_prompt}, {@code n_gen}, {@code n_depth}, {@code avg_ts}), never from its table. A llama-bench
 * older than {@code -d} (before mid-2025) refuses it; the rounds then run without it and its decode steps start from
 * an empty context ({@link #decodeDepth} 0): on a model of Qwen2.5-0.5B's shape the 128 cached tokens it skips are
 * 2 MB of a step's ~500 MB, so the comparison moves by well under 1%, in llama.cpp's favour.
 */
public final class LlamaBench {
    /** One round's numbers: tokens/s, and the context its decode steps started after. */
    public record Result(double prefillTokensPerSecond, double decodeTokensPerSecond, int decodeDepth) {
    }

    private final Path executable;
    private final Path gguf;
    private final int threads;
    private final int promptLength;
    private final int newTokens;
    /** Whether this llama-bench takes {@code -d}; found out by its first round. */
    private boolean depthFlag = true;

    private LlamaBench(Path executable, Path gguf, int threads, int promptLength, int newTokens) {
        this.executable = executable;
        this.gguf = gguf;
        this.threads = threads;
        this.promptLength = promptLength;
        this.newTokens = newTokens;
    }

    /**
     * Checks both paths before any model is loaded: the GGUF file must be a readable file that starts with the GGUF
     * magic, the executable a file this user may run.
     */
    public static LlamaBench of(Path executable, Path gguf, int threads, int promptLength, int newTokens) {
        if (!Files.isRegularFile(gguf) || !Files.isReadable(gguf)) {
            throw new UserInputException("--compare-gguf " + gguf + " is not a readable file");
        }
        try (InputStream in = Files.newInputStream(gguf)) {
            byte[] magic = in.readNBytes(4);
            if (!"GGUF".equals(new String(magic, StandardCharsets.US_ASCII))) {
                throw new UserInputException("--compare-gguf " + gguf + " is not a GGUF file (it does not start "
                        + "with the GGUF magic); runner convert --model M --to gguf writes one");
            }
        } catch (IOException e) {
            throw new UserInputException("--compare-gguf " + gguf + " cannot be read: " + e.getMessage());
        }
        if (!Files.isRegularFile(executable) || !Files.isExecutable(executable)) {
            throw new UserInputException("--llama-bench " + executable + " is not an executable file (llama.cpp builds "
                    + "it as build/bin/llama-bench)");
        }
        return new LlamaBench(executable, gguf, threads, promptLength, newTokens);
    }

    /** The same comparison on {@code count} threads: the session says what each op runs on once the model loads. */
    public LlamaBench withThreads(int count) {
        return new LlamaBench(executable, gguf, count, promptLength, newTokens);
    }

    /** The command line of one round. */
    List<String> command() {
        List<String> command = new ArrayList<>(List.of(executable.toString(), "-m", gguf.toString(), "-t",
                Integer.toString(threads), "-p", Integer.toString(promptLength), "-n", Integer.toString(newTokens - 1)));
        if (depthFlag) {
            command.addAll(List.of("-d", "0," + promptLength));
        }
        command.addAll(List.of("-r", "1", "-o", "json"));
        return command;
    }

    /** The context llama-bench's decode steps start after: the prompt's length, or 0 where it has no {@code -d}. */
    public int decodeDepth() {
        return depthFlag ? promptLength : 0;
    }

    /** Runs one round; a failure of llama-bench is one line with its exit status and last words. */
    public Result run() {
        Path errors = null;
        try {
            errors = Files.createTempFile("crucible-llama-bench", ".err");
            ProcessBuilder builder = new ProcessBuilder(command()).redirectErrorStream(false)
                    .redirectError(errors.toFile()).redirectInput(ProcessBuilder.Redirect.from(nullDevice()));
            if (dev.crucible.torch.TorchRuntime.setOpenMpWaitPolicy()) {
                // llama.cpp runs on OpenMP too, and ran 2.5x slower with the policy Crucible sets for libtorch
                // (two threads, measured): it gets the environment the user gave, as if it ran alone.
                builder.environment().remove("OMP_WAIT_POLICY");
            }
            Process process = builder.start();
            byte[] output = process.getInputStream().readAllBytes();
            int status = process.waitFor();
            if (status != 0) {
                String last = lastLine(errors);
                if (depthFlag && last.matches(".*invalid (parameter|argument).*-d\\b.*")) {
                    depthFlag = false;
                    return run();
                }
                throw new UserInputException("llama-bench exited with status " + status + ": " + last
                        + " (ran: " + String.join(" ", command()) + ")");
            }
            return parse(new String(output, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UserInputException("llama-bench could not be run: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UserInputException("interrupted while llama-bench ran");
        } finally {
            if (errors != null) {
                try {
                    Files.deleteIfExists(errors);
                } catch (IOException ignored) {
                    // a temporary file; the OS cleans its temporary folder
                }
            }
        }
    }

    /** The prefill at depth 0 and the decode at depth P from llama-bench's JSON array of tests. */
    Result parse(String json) {
        JsonNode tests;
        try {
            tests = new ObjectMapper().readTree(json);
        } catch (IOException e) {
            throw new UserInputException("llama-bench printed no JSON (" + e.getMessage().lines().findFirst().orElse("") + ")");
        }
        double prefill = Double.NaN;
        double decode = Double.NaN;
        if (tests != null && tests.isArray()) {
            for (JsonNode test : tests) {
                int prompt = test.path("n_prompt").asInt(-1);
                int generated = test.path("n_gen").asInt(-1);
                int depth = test.path("n_depth").asInt(0);
                double rate = test.path("avg_ts").asDouble(Double.NaN);
                if (prompt == promptLength && generated == 0 && depth == 0) {
                    prefill = rate;
                } else if (prompt == 0 && generated == newTokens - 1 && depth == decodeDepth()) {
                    decode = rate;
                }
            }
        }
        if (!(prefill > 0) || !(decode > 0)) {
            throw new UserInputException(String.format(Locale.ROOT, "llama-bench's JSON has no pp%d at depth 0 and "
                    + "tg%d at depth %d (is it a llama.cpp build from 2025 or later, with -d?)", promptLength,
                    newTokens - 1, decodeDepth()));
        }
        return new Result(prefill, decode, decodeDepth());
    }

    public Path gguf() {
        return gguf;
    }

    public Path executable() {
        return executable;
    }

    private static java.io.File nullDevice() {
        return new java.io.File(System.getProperty("os.name", "").startsWith("Windows") ? "NUL" : "/dev/null");
    }

    private static String lastLine(Path file) throws IOException {
        List<String> lines = new ArrayList<>(Files.readAllLines(file, StandardCharsets.UTF_8));
        lines.removeIf(String::isBlank);
        return lines.isEmpty() ? "(nothing on standard error)" : lines.getLast().strip();
    }
}
