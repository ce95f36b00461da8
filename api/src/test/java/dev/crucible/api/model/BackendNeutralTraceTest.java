package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.RecordingOps;
import dev.crucible.api.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The model definition runs through an op interface that does no math and only records op names and shapes, as
 * a tracer for a static-shape compiler would: proof that nothing in it depends on a backend or on tensor values.
 */
class BackendNeutralTraceTest {

    @Test
    void stories260kForwardRecordsEveryOpWithConsistentShapes() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("stories260k"))) {
            Transformer transformer = ModelFixtures.shapes(config, checkpoint, ops).transformer();
            long batch = 2;
            long length = 5;
            Step step = new Step(
                    ops.constant(new long[10], batch, length),
                    ops.constant(new long[10], batch, length),
                    ops.constant(new long[5], length),
                    ops.constant(new long[5], length),
                    ops.constant(new long[2], batch),
                    RecordingOps.shape(DType.F32, 512, 8),
                    RecordingOps.shape(DType.F32, 512, 8),
                    false);
            List<long[]> residuals = new ArrayList<>();
            Tensor logits = transformer.forward(ops, step, new ResidualHook() {
                @Override
                public void residual(int boundary, Tensor hidden) {
                    residuals.add(hidden.shape());
                }
            });

            assertArrayEquals(new long[] {2, 1, 512}, logits.shape());
            assertEquals(config.numLayers() + 1, residuals.size());
            residuals.forEach(shape -> assertArrayEquals(new long[] {2, 5, 64}, shape));
            Map<String, Integer> counts = counts(ops.trace());
            assertEquals(5, counts.get("attention"));
            assertEquals(5 * 7 + 1, counts.get("linear"), "seven projections per layer and the output head");
            assertEquals(5 * 2 + 1, counts.get("rmsNorm"));
            assertEquals(3, counts.get("embedding"), "tokens, cos and sin");
            assertEquals(null, counts.get("read"), "a step never reads values to the host");
            assertTrue(ops.trace().stream().filter(op -> op.name().equals("attention"))
                    .allMatch(op -> op.signature().startsWith("F32[2, 8, 5, 8] F32[2, 4, 5, 8] F32[2, 4, 5, 8] "
                            + "BOOL[2, 1, 5, 5]")), "GQA: 8 query heads on 4 key/value heads");
        }
    }

    @Test
    void staticShapeDecodeStepsAreOneProgram() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-qwen3"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("tiny-qwen3"))) {
            PlacedModel model = ModelFixtures.shapes(config, checkpoint, ops);
            int retainedWeights = ops.retained();
            try (ModelRunner runner = new ModelRunner(ops, model, new ShapePolicy(1, 1, true))) {
                runner.decode(new DecodeRequest(List.of(new int[] {1, 5, 6}, new int[] {1}), 4, Set.of(), 2, 2), 2);
            }
            assertEquals(retainedWeights, ops.retained(), "the runner releases its cache, slots and tables");

            List<List<RecordingOps.Op>> steps = stepsBetweenReads(ops.trace());
            // prefill (logits read, then ids read), then three decode steps (ids read each).
            List<RecordingOps.Op> firstDecode = steps.get(2);
            assertTrue(firstDecode.stream().anyMatch(op -> op.name().equals("writeSlots")
                            && op.signature().startsWith("F32[2, 2, 6, 32] I64[1] F32[2, 2, 1, 32]")),
                    "keys of one token written into a cache of 3 + 4 - 1 slots");
            assertEquals(firstDecode, steps.get(3));
            assertEquals(firstDecode, steps.get(4));
            assertTrue(firstDecode.stream().filter(op -> op.name().equals("attention"))
                    .allMatch(op -> op.signature().contains("F32[2, 2, 6, 32] F32[2, 2, 6, 32] BOOL[2, 1, 1, 6]")),
                    "static shapes attend over the whole cache");
        }
    }

    /**
     * With the shapes a compiling backend asks for (prompts in buckets of 16 slots, a cache of a multiple of 32, every
     * decode step over the whole cache) a decode request is two programs, one prefill and one decode step, and a
     * second request whose lengths fall in the same buckets needs no new one.
     */
    @Test
    void aStaticShapeDecodeRequestIsTwoPrograms() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-qwen3"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("tiny-qwen3"));
             PlacedModel model = ModelFixtures.shapes(config, checkpoint, ops);
             ModelRunner runner = new ModelRunner(ops, model, new ShapePolicy(16, 32, true))) {
            runner.decode(new DecodeRequest(List.of(new int[] {1, 5, 6}, new int[] {1}), 8, Set.of(), 2, 2), 2);
            List<String> programs = ops.programs();
            assertEquals(2, programs.size(), programs::toString);
            assertTrue(programs.get(0).startsWith("prefill [I64[2, 16], I64[2, 16], I64[16], I64[32]"), programs.get(0));
            assertTrue(programs.get(1).startsWith("decode [I64[2, 1], I64[2, 1], I64[1], I64[32]"), programs.get(1));
            assertTrue(programs.get(1).endsWith("F32[2, 2, 32, 32]]"), "the state goes in: " + programs.get(1));

            runner.decode(new DecodeRequest(List.of(new int[] {1, 2, 3, 4, 5, 6, 7}, new int[] {1, 9}), 5, Set.of(), 2,
                    2), 2);
            assertEquals(programs, ops.programs(), "the same buckets compile nothing new");
        }
    }

    /** Eager shapes (what libtorch runs best) are a program per prompt length and per decode step. */
    @Test
    void exactShapesMakeAProgramPerLengthWhichIsWhyCompilingBackendsBucket() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-qwen3"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("tiny-qwen3"));
             PlacedModel model = ModelFixtures.shapes(config, checkpoint, ops);
             ModelRunner runner = new ModelRunner(ops, model, ShapePolicy.EXACT)) {
            runner.decode(new DecodeRequest(List.of(new int[] {1, 5, 6}, new int[] {1}), 4, Set.of(), 2, 2), 2);
            assertEquals(4, ops.programs().size(), "a prefill and three decode steps that attend over more keys each");
            assertTrue(ops.programs().get(0).startsWith("prefill [I64[2, 3], I64[2, 3], I64[3], I64[3]"));
        }
    }

    private static List<List<RecordingOps.Op>> stepsBetweenReads(List<RecordingOps.Op> trace) {
        List<List<RecordingOps.Op>> steps = new ArrayList<>();
        List<RecordingOps.Op> current = new ArrayList<>();
        for (RecordingOps.Op op : trace) {
            if (op.name().equals("read")) {
                steps.add(current);
                current = new ArrayList<>();
            } else {
                current.add(op);
            }
        }
        return steps;
    }

    private static Map<String, Integer> counts(List<RecordingOps.Op> trace) {
        Map<String, Integer> counts = new TreeMap<>();
        trace.forEach(op -> counts.merge(op.name(), 1, Integer::sum));
        return counts;
    }
}
