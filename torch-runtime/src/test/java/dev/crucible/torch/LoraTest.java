package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.LinearModule;
import dev.crucible.api.model.LoraLinear;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.TensorScope;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The LoRA-augmented linear: adapters change the output, zeroing or removing them restores it, merges agree. */
class LoraTest {

    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);
    private static final String DOWN = "model.layers.2.mlp.down_proj";
    private static final String QUERY = "model.layers.0.self_attn.q_proj";

    @TempDir
    Path temporary;

    @Test
    void adaptersChangeLogitsAndZeroingOrRemovingThemRestoresTheBase() {
        Fixture fixture = Fixture.load("stories260k");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            List<LinearModule> modules = model.linearModules();
            assertEquals(5 * 7, modules.size());
            assertEquals(new LinearModule(QUERY, 64, 64), modules.getFirst());
            assertTrue(modules.contains(new LinearModule(DOWN, 172, 64)));

            float[] base = logits(model, fixture);
            model.setAdapter(DOWN, factors(2, 172, 64, 0.5, 1));
            float[] adapted = logits(model, fixture);
            assertTrue(maxDifference(base, adapted) > 1e-2, "an adapter must change the logits");

            model.zeroAdapters();
            assertArrayEquals(base, logits(model, fixture), "B = 0 computes the base weights exactly");
            model.setAdapter(DOWN, factors(2, 172, 64, 0.5, 1));
            assertArrayEquals(adapted, logits(model, fixture), "setting the same factors again");
            model.removeAdapters();
            assertArrayEquals(base, logits(model, fixture));
        }
    }

    /**
     * A model that folds its adapters into copies of the weights (the CPU backend's small models) computes what the
     * adapters compute beside the weights, to float32 rounding; a zeroed adapter computes with the base weight
     * itself (exactly the base); merges still read the factors; training's adapters are never folded.
     */
    @Test
    void foldedAdaptersComputeWhatTheAdaptersCompute() {
        Fixture fixture = Fixture.load("stories260k");
        long before = Pointer.totalCount();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel plain = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32));
             TorchModel folding = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            folding.placed().foldAdapters();
            float[] base = logits(plain, fixture);
            for (TorchModel model : List.of(plain, folding)) {
                model.setAdapter(DOWN, factors(3, 172, 64, 0.5, 1));
                model.setAdapter(QUERY, factors(1, 64, 64, 2.0, 2));
            }
            LoraLinear down = folding.placed().linear(DOWN);
            assertNotNull(down.folded(), "folded");
            assertNotSame(down.weight(), down.folded());
            assertNull(plain.placed().linear(DOWN).folded(), "a model that does not fold");
            float[] adapted = logits(plain, fixture);
            double difference = maxDifference(adapted, logits(folding, fixture));
            assertTrue(difference < 1e-4, "folded weights differ from the adapters by " + difference);
            assertTrue(maxDifference(base, adapted) > 1e-2, "the adapters change the logits");
            try (MergedWeights fromAdapters = BACKEND.merge(plain, checkpoint);
                 MergedWeights fromFolding = BACKEND.merge(folding, checkpoint)) {
                assertArrayEquals(fromAdapters.tensors().get(DOWN + ".weight").toFloatArray(),
                        fromFolding.tensors().get(DOWN + ".weight").toFloatArray(), "merges read the factors");
            }

            folding.zeroAdapters();
            assertSame(down.weight(), down.folded(), "a zero adapter computes with the base weight");
            assertArrayEquals(base, logits(folding, fixture), "exactly the base");
            folding.setAdapter(DOWN, factors(3, 172, 64, 0.5, 1));
            assertTrue(maxDifference(adapted, logits(folding, fixture)) > 1e-3, "only DOWN adapted now");
            folding.removeAdapters();
            assertNull(down.folded());
            assertArrayEquals(base, logits(folding, fixture));

            // Trials fold and reset hundreds of times: every fold's copy and temporaries are freed.
            long objects = Pointer.totalCount();
            for (int trial = 0; trial < 50; trial++) {
                folding.zeroAdapters();
                folding.setAdapter(DOWN, factors(3, 172, 64, 0.5, trial));
            }
            folding.removeAdapters();
            assertEquals(objects, Pointer.totalCount(), "JavaCPP objects left by folding");

            TorchOps ops = folding.ops();
            LoraFactors trained = factors(2, 172, 64, 1.0, 3);
            try (TensorScope scope = ops.openScope()) {
                folding.placed().attachAdapter(DOWN, ops.retain(ops.constant(trained.a().toFloatArray(), 2, 172)),
                        ops.retain(ops.constant(trained.b().toFloatArray(), 64, 2)), 1.0);
            }
            assertNull(down.folded(), "training's adapters change every step: never folded");
        }
        assertEquals(before, Pointer.totalCount(), "JavaCPP objects left after both models closed");
    }

    @Test
    void badAdaptersAreRefused() {
        Fixture fixture = Fixture.load("stories260k");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            assertThrows(IllegalArgumentException.class, () -> model.setAdapter(DOWN, factors(2, 64, 64, 1, 1)));
            assertThrows(IllegalArgumentException.class, () -> model.setAdapter("model.layers.9.mlp.up_proj",
                    factors(2, 64, 172, 1, 1)));
        }
    }

    /** W + scale·B·A written as a checkpoint computes what the adapter computes beside W. */
    @Test
    void mergedWeightsReproduceTheAdaptedModel() throws IOException {
        Fixture fixture = Fixture.load("stories260k");
        Path mergedFolder = temporary.resolve("merged");
        float[] adapted;
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            LoraFactors down = factors(3, 172, 64, 0.25, 2);
            LoraFactors query = factors(1, 64, 64, 2.0, 3);
            model.setAdapter(DOWN, down);
            model.setAdapter(QUERY, query);
            adapted = logits(model, fixture);
            try (MergedWeights merged = BACKEND.merge(model, checkpoint)) {
                assertEquals(List.of(QUERY + ".weight", DOWN + ".weight"), List.copyOf(merged.tensors().keySet()));
                HostTensor mergedDown = merged.tensors().get(DOWN + ".weight");
                assertEquals(DType.F32, mergedDown.dtype());
                assertArrayEquals(new long[] {64, 172}, mergedDown.shape());
                assertArrayEquals(hostMerge(checkpoint.tensor(DOWN + ".weight"), down), mergedDown.toFloatArray(),
                        1e-5f);
                writeCheckpoint(checkpoint, merged.tensors(), DType.F32, mergedFolder, fixture);
            }
        }
        try (Checkpoint merged = Checkpoint.open(mergedFolder);
             TorchModel model = BACKEND.shard(new ShardRequest(ModelConfig.read(mergedFolder), merged, DType.F32))) {
            float[] fromMerged = logits(model, fixture);
            double difference = maxDifference(adapted, fromMerged);
            assertTrue(difference < 1e-4, "merged weights differ from the adapter by " + difference);
        }
    }

    @Test
    void mergeKeepsTheStoredDtype() throws IOException {
        Fixture fixture = Fixture.load("stories260k");
        Path bf16Folder = temporary.resolve("bf16");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            writeCheckpoint(checkpoint, Map.of(), DType.BF16, bf16Folder, fixture);
        }
        try (Checkpoint checkpoint = Checkpoint.open(bf16Folder);
             TorchModel model = BACKEND.shard(new ShardRequest(fixture.config(), checkpoint, DType.F32))) {
            LoraFactors down = factors(2, 172, 64, 1.0, 4);
            model.setAdapter(DOWN, down);
            try (MergedWeights merged = BACKEND.merge(model, checkpoint)) {
                HostTensor weight = merged.tensors().get(DOWN + ".weight");
                assertEquals(DType.BF16, weight.dtype());
                float[] expected = hostMerge(checkpoint.tensor(DOWN + ".weight"), down);
                float[] actual = weight.toFloatArray();
                for (int i = 0; i < expected.length; i++) {
                    assertEquals(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(expected[i])), actual[i],
                            Math.ulp(actual[i]), "element " + i + " is the float32 sum rounded once to bf16");
                }
            }
        }
    }

    private static float[] hostMerge(HostTensor weight, LoraFactors factors) {
        float[] w = weight.toFloatArray();
        float[] a = factors.a().toFloatArray();
        float[] b = factors.b().toFloatArray();
        int rank = (int) factors.a().shape()[0];
        int in = (int) weight.shape()[1];
        int out = (int) weight.shape()[0];
        float[] merged = new float[w.length];
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                double delta = 0;
                for (int r = 0; r < rank; r++) {
                    delta += (double) b[o * rank + r] * a[r * in + i];
                }
                merged[o * in + i] = (float) (w[o * in + i] + factors.scale() * delta);
            }
        }
        return merged;
    }

    /** Every tensor of {@code base}, or its merged replacement, stored as {@code dtype}, plus config.json. */
    private static void writeCheckpoint(Checkpoint base, Map<String, HostTensor> replacements, DType dtype, Path folder,
                                        Fixture fixture) throws IOException {
        Files.createDirectories(folder);
        List<WritableTensor> tensors = new ArrayList<>();
        for (String name : base.names()) {
            HostTensor tensor = replacements.getOrDefault(name, base.tensor(name));
            tensors.add(WritableTensor.ofFloats(name, dtype, tensor.shape(), tensor.toFloatArray()));
        }
        SafetensorsWriter.write(folder.resolve(Checkpoint.SINGLE_FILE), tensors, Map.of());
        Files.copy(fixture.directory().resolve(ModelConfig.FILE_NAME), folder.resolve(ModelConfig.FILE_NAME));
    }

    private static float[] logits(TorchModel model, Fixture fixture) {
        List<float[]> all = BACKEND.forward(model, new ForwardRequest(fixture.prompts(), 0)).prompts().stream()
                .map(activations -> activations.logits()).toList();
        float[] flat = new float[all.size() * all.getFirst().length];
        for (int i = 0; i < all.size(); i++) {
            System.arraycopy(all.get(i), 0, flat, i * all.getFirst().length, all.getFirst().length);
        }
        return flat;
    }

    /** Random factors {@code A [rank, in]} and {@code B [out, rank]} (other tests adapt with them too). */
    static LoraFactors factors(int rank, int in, int out, double scale, long seed) {
        Random random = new Random(seed);
        return new LoraFactors(tensor("lora_A", random, rank, in), tensor("lora_B", random, out, rank), scale);
    }

    private static HostTensor tensor(String name, Random random, int rows, int columns) {
        float[] values = new float[rows * columns];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * 0.2);
        }
        return new HostTensor(name, DType.F32, new long[] {rows, columns}, MemorySegment.ofArray(values));
    }

    private static double maxDifference(float[] a, float[] b) {
        double worst = 0;
        for (int i = 0; i < a.length; i++) {
            worst = Math.max(worst, Math.abs(a[i] - b[i]));
        }
        return worst;
    }
}
