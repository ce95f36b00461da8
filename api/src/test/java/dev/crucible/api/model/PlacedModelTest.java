package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.RecordingOps;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The backend-neutral placed model over ops that compute nothing: what any backend gets by supplying a
 * {@link Placement} — binding, adapters, quantized weights and ownership of every tensor.
 */
class PlacedModelTest {

    private static final String DOWN = "model.layers.2.mlp.down_proj";

    @Test
    void ownsEveryTensorItPlacesAndFreesThemOnClose() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("stories260k"))) {
            PlacedModel model = ModelFixtures.shapes(config, checkpoint, ops);
            // stories260k ties its head but also stores lm_head.weight, which is never read: the embedding is the head.
            int weights = checkpoint.names().size() - 1;
            assertEquals(weights, model.placedTensors().size());
            assertFalse(model.placedTensors().containsKey("lm_head.weight"));
            assertEquals(weights + 2, ops.retained(), "every weight and the two rotary tables");

            model.setAdapter(DOWN, factors(2, 64, 172));
            model.zeroAdapters();
            model.setAdapter(DOWN, factors(2, 64, 172));
            assertEquals(weights + 4, ops.retained(), "one adapter's A and B; replaced ones are freed");
            model.ensureTables(1000);
            assertEquals(weights + 4, ops.retained(), "regrown tables replace the old ones");
            model.removeAdapters();
            assertEquals(weights + 2, ops.retained());
            model.close();
            assertEquals(0, ops.retained());
            assertThrows(IllegalStateException.class, model::transformer);
        }
    }

    /** A placement that keeps projections as NF4: the weights are quantized parts and the forward dequantizes them. */
    @Test
    void projectionsPlacedQuantizedRunThroughTheComposedDequantization() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("stories260k"));
             PlacedModel model = PlacedModel.place(config, checkpoint, new ShapesPlacement(ops) {
                 @Override
                 public WeightFormat format(String name) {
                     return name.endsWith("_proj.weight") ? WeightFormat.Nf4.QLORA : super.format(name);
                 }
             })) {
            LoraLinear down = model.linear(DOWN);
            assertNull(down.weight());
            assertNotNull(down.quantized());
            assertArrayEquals(new long[] {64 * 172 / 2}, down.quantized().data().shape(), "two codes per byte");
            assertEquals(List.of("model.embed_tokens.weight"), model.placedTensors().keySet().stream().limit(1).toList());

            Step step = new PaddedBatch(1, 3, new long[] {1, 5, 6}, new long[] {0})
                    .wholeBatch(ops, model.cosTable(), model.sinTable(), false);
            Tensor logits = model.transformer().forward(ops, step, ResidualHook.NONE);
            assertArrayEquals(new long[] {1, 1, 512}, logits.shape());
            assertEquals(5 * 7, ops.trace().stream().filter(op -> op.name().equals("embedding")
                    && op.signature().startsWith("F32[256, 2]")).count(), "each projection looks its codes up once");
        }
    }

    private static LoraFactors factors(int rank, long out, long in) {
        return new LoraFactors(host("a", rank, in), host("b", out, rank), 1.0);
    }

    private static HostTensor host(String name, long rows, long columns) {
        return new HostTensor(name, DType.F32, new long[] {rows, columns},
                MemorySegment.ofArray(new float[Math.toIntExact(rows * columns)]));
    }

    /** Every tensor as a shape on the recording ops, as {@link ModelFixtures#shapes} places them. */
    private static class ShapesPlacement implements Placement {
        private final RecordingOps ops;

        ShapesPlacement(RecordingOps ops) {
            this.ops = ops;
        }

        @Override
        public TensorOps ops() {
            return ops;
        }

        @Override
        public DType computeDtype() {
            return DType.F32;
        }

        @Override
        public Tensor toDevice(HostTensor host, DType dtype) {
            return RecordingOps.shape(dtype, host.shape());
        }
    }
}
