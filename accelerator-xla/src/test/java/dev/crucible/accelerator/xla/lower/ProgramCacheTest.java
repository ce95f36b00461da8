package dev.crucible.accelerator.xla.lower;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.exec.JaxCpuExecutor;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.tensor.DType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --xla-cache}: a second process (a new runtime) loads the programs the first one compiled instead of
 * compiling them, and runs them to the same ids; a torn file is compiled again and replaced.
 */
class ProgramCacheTest {

    private static List<Generation> decode(JaxCpuExecutor executor, ProgramCache programs, GoldenFixture fixture) {
        try (XlaOps ops = new XlaOps(executor, Sharding.SINGLE, programs);
             Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             PlacedModel model = PlacedModel.place(fixture.config(), checkpoint, new XlaPlacement(ops, DType.F32));
             ModelRunner runner = new ModelRunner(ops, model, Buckets.SHAPES)) {
            return runner.decode(new DecodeRequest(fixture.prompts().subList(1, 3), 12, Set.of(), 0, 2), 2).generations();
        }
    }

    @Test
    void aLaterProcessLoadsWhatAnEarlierOneCompiled(@TempDir Path folder) throws Exception {
        GoldenFixture fixture = GoldenFixture.load("stories260k");
        List<String> notes = new ArrayList<>();
        List<Generation> first;
        try (JaxCpuExecutor executor = JaxCpuExecutor.start(1);
             ProgramCache programs = new ProgramCache(executor, Optional.of(folder), notes::add)) {
            first = decode(executor, programs, fixture);
            assertEquals(2, programs.compiles().size(), "prefill and decode step: " + programs.compiles());
            assertTrue(programs.compiles().stream().noneMatch(ProgramCache.Compile::fromDisk));
        }
        List<Path> files = files(folder);
        assertEquals(2, files.size(), "one file per program");
        try (JaxCpuExecutor executor = JaxCpuExecutor.start(1);
             ProgramCache programs = new ProgramCache(executor, Optional.of(folder), notes::add)) {
            List<Generation> second = decode(executor, programs, fixture);
            assertTrue(programs.compiles().stream().allMatch(ProgramCache.Compile::fromDisk), programs.compiles().toString());
            for (int i = 0; i < first.size(); i++) {
                assertArrayEquals(first.get(i).tokens(), second.get(i).tokens());
            }
        }
        Files.write(files.getFirst(), new byte[] {1, 2, 3});
        try (JaxCpuExecutor executor = JaxCpuExecutor.start(1);
             ProgramCache programs = new ProgramCache(executor, Optional.of(folder), notes::add)) {
            decode(executor, programs, fixture);
            assertEquals(1, programs.compiles().stream().filter(c -> !c.fromDisk()).count(), "the torn one, compiled");
        }
        assertTrue(Files.size(files.getFirst()) > 3, "and written anew");
        assertEquals(List.of(), notes);
    }

    @Test
    void aFolderThatCannotBeWrittenIsSaidOnceAndTheRunGoesOn(@TempDir Path temp) throws Exception {
        GoldenFixture fixture = GoldenFixture.load("stories260k");
        Path folder = Files.createDirectories(temp.resolve("cache"));
        List<String> notes = new ArrayList<>();
        try (JaxCpuExecutor executor = JaxCpuExecutor.start(1);
             ProgramCache programs = new ProgramCache(executor, Optional.of(folder), notes::add)) {
            Files.delete(folder);
            Files.writeString(folder, "a file where the folder was");
            List<Generation> generations = decode(executor, programs, fixture);
            assertEquals(2, generations.size());
        }
        assertEquals(1, notes.size(), notes.toString());
        assertTrue(notes.getFirst().startsWith("xla: cannot keep compiled programs in " + folder), notes.getFirst());
        assertFalse(Files.isDirectory(folder));
    }

    private static List<Path> files(Path folder) throws Exception {
        try (Stream<Path> list = Files.list(folder)) {
            return list.filter(p -> p.toString().endsWith(".xla")).sorted().toList();
        }
    }
}
