package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.exec.CompiledProgram;
import dev.crucible.accelerator.xla.exec.Program;
import dev.crucible.accelerator.xla.exec.XlaExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Compiled programs of one executor, by what they compile from (the StableHLO text and the compile options): a
 * program traced again with the same shapes and structure is the same text, so it is compiled once per process
 * however often it runs. Programs differ only in the names a manifest shows, which are not part of the key.
 */
public final class ProgramCache implements AutoCloseable {

    /** One compile: which program and how long it took. */
    public record Compile(String program, int partitions, Duration time) { }

    private final XlaExecutor executor;
    private final Map<String, CompiledProgram> compiled = new HashMap<>();
    private final List<Compile> compiles = new ArrayList<>();

    public ProgramCache(XlaExecutor executor) {
        this.executor = executor;
    }

    /** The compiled {@code program}, compiling it on first sight. */
    public synchronized CompiledProgram get(Program program) {
        String key = HexFormat.of().formatHex(program.compileOptions().toProto()) + "\n" + program.stablehlo();
        CompiledProgram hit = compiled.get(key);
        if (hit != null) {
            return hit;
        }
        long start = System.nanoTime();
        CompiledProgram fresh = executor.compile(program);
        compiles.add(new Compile(program.name(), program.partitions(), Duration.ofNanos(System.nanoTime() - start)));
        compiled.put(key, fresh);
        return fresh;
    }

    /** Every compile so far, in order (a cache hit is not one). */
    public synchronized List<Compile> compiles() {
        return List.copyOf(compiles);
    }

    @Override
    public synchronized void close() {
        compiled.values().forEach(CompiledProgram::close);
        compiled.clear();
    }
}
