package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.exec.CompiledProgram;
import dev.crucible.accelerator.xla.exec.Program;
import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.api.UserInputException;
import dev.crucible.api.io.AtomicFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Compiled programs of one executor, by what they compile from (the StableHLO text and the compile options): a
 * program traced again with the same shapes and structure is the same text, so it is compiled once per process
 * however often it runs, whichever model of the same shape runs it (weights are arguments). Names, which only
 * manifests show, are not part of the key.
 *
 * <p>With a folder ({@code --xla-cache DIR}) a compiled program is also kept on disk where the runtime can serialize
 * it, under a hash of the runtime's fingerprint (platform and version: a serialized executable is valid for that
 * only), the compile options and the text; a later process loads it instead of compiling. The folder is trusted like
 * code: loading a serialized executable runs what it holds. A file the runtime cannot load is compiled afresh and
 * replaced; a folder that cannot be written to is said once, and the run goes on without it.
 */
public final class ProgramCache implements AutoCloseable {

    /** One compile (or load from disk): which program and how long it took. */
    public record Compile(String program, int partitions, Duration time, boolean fromDisk) { }

    private final XlaExecutor executor;
    private final Optional<Path> folder;
    private final Consumer<String> notes;
    private final Map<String, CompiledProgram> compiled = new HashMap<>();
    private final List<Compile> compiles = new ArrayList<>();
    private boolean diskFailed;

    public ProgramCache(XlaExecutor executor) {
        this(executor, Optional.empty(), note -> { });
    }

    /**
     * @param folder an existing, writable folder to keep serialized programs in, or empty
     * @param notes  where a problem with the folder is said (one line)
     */
    public ProgramCache(XlaExecutor executor, Optional<Path> folder, Consumer<String> notes) {
        this.executor = executor;
        this.folder = folder;
        this.notes = notes;
    }

    /** The compiled {@code program}: from memory, else from the folder, else compiled (and kept there). */
    public synchronized CompiledProgram get(Program program) {
        String key = HexFormat.of().formatHex(program.compileOptions().toProto()) + "\n" + program.stablehlo();
        CompiledProgram hit = compiled.get(key);
        if (hit != null) {
            return hit;
        }
        Optional<Path> file = folder.map(dir -> dir.resolve(sha256(executor.fingerprint() + "\n" + key) + ".xla"));
        long start = System.nanoTime();
        CompiledProgram fresh = file.flatMap(f -> load(program, f)).orElse(null);
        boolean fromDisk = fresh != null;
        if (fresh == null) {
            fresh = executor.compile(program);
            if (file.isPresent()) {
                keep(fresh, file.get());
            }
        }
        compiles.add(new Compile(program.name(), program.partitions(), Duration.ofNanos(System.nanoTime() - start),
                fromDisk));
        compiled.put(key, fresh);
        return fresh;
    }

    private Optional<CompiledProgram> load(Program program, Path file) {
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        try {
            return Optional.of(executor.deserialize(program, Files.readAllBytes(file)));
        } catch (IOException | RuntimeException e) {
            // A torn or foreign file: compile again and write it anew.
            return Optional.empty();
        }
    }

    private void keep(CompiledProgram program, Path file) {
        if (diskFailed) {
            return;
        }
        try {
            Optional<byte[]> bytes = executor.serialize(program);
            if (bytes.isEmpty()) {
                diskFailed = true;
                notes.accept("xla: the " + executor.platform()
                        + " runtime cannot serialize programs; --xla-cache keeps nothing");
                return;
            }
            AtomicFiles.write(file, channel -> {
                ByteBuffer buffer = ByteBuffer.wrap(bytes.get());
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
            });
        } catch (UncheckedIOException | UserInputException e) {
            // A full disk or a folder that went away: the run does not need the cache.
            diskFailed = true;
            notes.accept("xla: cannot keep compiled programs in " + file.getParent() + " (" + e.getMessage()
                    + "); going on without --xla-cache");
        }
    }

    private static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every compile so far, in order (a hit in memory is not one; a load from disk is, marked as such). */
    public synchronized List<Compile> compiles() {
        return List.copyOf(compiles);
    }

    @Override
    public synchronized void close() {
        compiled.values().forEach(CompiledProgram::close);
        compiled.clear();
    }
}
