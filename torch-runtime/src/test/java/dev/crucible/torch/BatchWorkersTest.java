package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.Activations;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Batches run side by side on worker threads give each prompt exactly what batches run one after another give: every
 * batch has its own tensors and cache, and its arithmetic does not depend on which thread runs it.
 */
class BatchWorkersTest {

    /** The test backend, with every batch of a request free to run on one of two workers. */
    private static final class SideBySide extends TestCpuBackend {
        SideBySide() {
            super(1);
        }

        @Override
        protected int batchWorkers(TorchEnvironment environment, ModelConfig config) {
            return 2;
        }
    }

    @Test
    void decodeAndForwardOnTwoWorkersEqualOneAfterAnother() {
        Fixture fixture = Fixture.load("stories260k");
        List<int[]> prompts = new ArrayList<>();
        for (int copy = 0; copy < 3; copy++) {
            fixture.cases().forEach(c -> prompts.add(c.promptIds()));
        }
        int pad = DecodeRequest.defaultPadToken(fixture.config());
        TestCpuBackend serial = new TestCpuBackend(1);
        TestCpuBackend parallel = new SideBySide();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel one = serial.shard(fixture.shardRequest(checkpoint, DType.F32));
             TorchModel two = parallel.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            // Batches of two: several batches per request, so the workers share them.
            DecodeRequest decode = new DecodeRequest(prompts, 12, Set.of(), pad, 2);
            List<Generation> expected = serial.decode(one, decode).generations();
            List<Generation> actual = parallel.decode(two, decode).generations();
            assertEquals(prompts.size(), actual.size());
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(expected.get(i).tokens(), actual.get(i).tokens(), "prompt " + i + " tokens");
                assertArrayEquals(expected.get(i).firstStepLogits(), actual.get(i).firstStepLogits(), "prompt " + i + " logits");
            }
            List<Activations> forwardExpected = serial.forward(one, new ForwardRequest(prompts, 2)).prompts();
            List<Activations> forwardActual = parallel.forward(two, new ForwardRequest(prompts, 2)).prompts();
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(forwardExpected.get(i).logits(), forwardActual.get(i).logits(), "prompt " + i);
                assertArrayEquals(forwardExpected.get(i).finalNorm(), forwardActual.get(i).finalNorm(), "prompt " + i);
            }
            assertTrue(Thread.getAllStackTraces().keySet().stream()
                    .anyMatch(thread -> thread.getName().equals("crucible-batch-worker")), "the batches ran on workers");
        }
    }
}
