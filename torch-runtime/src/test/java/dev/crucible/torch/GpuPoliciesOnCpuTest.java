package dev.crucible.torch;

import dev.crucible.api.quant.QuantizationConfig;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ShardRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * The policies a GPU plugin switches on in {@link TorchBackend}, run for real on the CPU: the dtype fallback's
 * one-token check and the batch-size search, each over the stories260k fixture.
 */
class GpuPoliciesOnCpuTest {

    /** A CPU backend with the GPU policies on: float16 then float32 for auto, batch sizes searched up to 4. */
    private static final class PolicyBackend extends TestCpuBackend {
        final List<String> reports = new ArrayList<>();

        PolicyBackend() {
            super(1);
        }

        @Override
        protected List<DType> dtypeCandidates(TorchEnvironment environment, DType chosen) {
            return List.of(DType.F16, DType.F32);
        }

        @Override
        protected OptionalInt batchSizeSearchCap(TorchModel model) {
            return OptionalInt.of(4);
        }

        @Override
        protected void report(String line) {
            reports.add(line);
        }
    }

    @Test
    void autoDtypeKeepsTheFirstCandidateWhoseFirstTokenIsFinite() {
        Fixture fixture = Fixture.load("stories260k");
        PolicyBackend backend = new PolicyBackend();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel auto = backend.shard(new ShardRequest(fixture.config(), checkpoint, DType.F32, QuantizationConfig.NONE, true));
             TorchModel named = backend.shard(new ShardRequest(fixture.config(), checkpoint, DType.F32, QuantizationConfig.NONE, false))) {
            assertEquals(DType.F16, auto.dtype(), "float16 is finite on stories260k, so it is kept");
            assertEquals(DType.F32, named.dtype(), "a dtype the user named is used as it is");
            assertTrue(backend.reports.isEmpty(), backend.reports.toString());
        }
    }

    @Test
    void batchSizeZeroIsSearchedOncePerPassAndGivesTheSameTokens() {
        Fixture fixture = Fixture.load("stories260k");
        PolicyBackend backend = new PolicyBackend();
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            prompts.add(fixture.prompts().get(i % fixture.prompts().size()));
        }
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = backend.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            DecodeRequest request = DecodeRequest.greedy(prompts, 6, fixture.config());
            DecodeResult searched = backend.decode(model, request);
            assertEquals(1, backend.reports.size());
            String table = backend.reports.getFirst();
            assertTrue(table.startsWith("batch size for the generation (kept for this model):"), table);
            for (String size : List.of("1", "2", "4")) {
                assertTrue(table.lines().anyMatch(l -> l.matches("\\|\\s+" + size + " \\|.*")), table);
            }
            assertEquals(1, table.lines().filter(l -> l.contains("<- kept")).count(), table);

            DecodeResult oneByOne = backend.decode(model, request.withBatchSize(1));
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(oneByOne.generations().get(i).tokens(), searched.generations().get(i).tokens());
            }
            backend.decode(model, request);
            assertEquals(1, backend.reports.size(), "the size found is kept for the model");

            backend.forward(model, new ForwardRequest(prompts, 0));
            assertEquals(2, backend.reports.size());
            assertTrue(backend.reports.getLast().startsWith("batch size for the residual pass"), backend.reports.getLast());
        }
    }
}
