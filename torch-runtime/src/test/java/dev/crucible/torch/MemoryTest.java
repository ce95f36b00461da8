package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.Test;

/** Native memory has an owner: hundreds of steps leave no native object and no resident memory behind. */
class MemoryTest {

    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);

    @Test
    void hundredsOfForwardsAndDecodesLeaveMemoryFlat() throws IOException {
        Fixture fixture = Fixture.load("stories260k");
        List<int[]> prompts = fixture.prompts();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            DecodeRequest decode = new DecodeRequest(prompts, 8, Set.of(), 2, prompts.size());
            for (int i = 0; i < 20; i++) {
                BACKEND.forward(model, new ForwardRequest(prompts, prompts.size()));
                BACKEND.decode(model, decode);
            }
            long objectsBefore = Pointer.totalCount();
            long nativeMiddle = 0;
            for (int i = 0; i < 200; i++) {
                if (i == 100) {
                    // Measured from the middle: the JIT's code cache and malloc's arenas still grow during the first
                    // hundred steps of a suite-long JVM; a leak keeps growing through the second hundred.
                    nativeMiddle = residentBytes() - committedHeap();
                }
                BACKEND.forward(model, new ForwardRequest(prompts, prompts.size()));
                if (i % 10 == 0) {
                    BACKEND.decode(model, decode);
                }
            }
            assertEquals(objectsBefore, Pointer.totalCount(), "JavaCPP objects still alive after the steps");
            long growth = residentBytes() - committedHeap() - nativeMiddle;
            assertTrue(growth < 16L << 20, "resident memory outside the Java heap grew by " + (growth >> 10)
                    + " KiB over the last 100 steps");
        }
    }

    @Test
    void closingAModelFreesItsWeights() {
        Fixture fixture = Fixture.load("tiny-qwen2");
        long objectsBefore = Pointer.totalCount();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32));
            BACKEND.forward(model, ForwardRequest.of(fixture.prompts()));
            assertTrue(Pointer.totalCount() > objectsBefore, "weights are JavaCPP-owned tensors");
            model.close();
        }
        assertEquals(objectsBefore, Pointer.totalCount(), "objects left after close");
    }

    private static long committedHeap() {
        return Runtime.getRuntime().totalMemory();
    }

    /** VmRSS of this process. */
    private static long residentBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}
