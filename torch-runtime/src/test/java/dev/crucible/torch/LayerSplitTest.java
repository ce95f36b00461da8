package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.DecodeState;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.LinearModule;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.LoraLinear;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.Role;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.torch.policy.LayerPlan;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A model split by layers over several devices, run for real on CPU stand-ins: this machine has no GPU, so every
 * "device" of the split is libtorch's CPU, each with its own ops. The ops refuse a tensor another device of the split
 * made, as CUDA refuses tensors of two GPUs in one op, so a tensor on the wrong device fails here as it would there;
 * copies between devices are real copies, counted through the split's listener.
 */
class LayerSplitTest {

    private static final TestCpuBackend WHOLE = new TestCpuBackend(1);

    /** A CPU backend that splits every model by the plan it is given, over that many CPU stand-ins. */
    private static final class SplitBackend extends TestCpuBackend {
        private final java.util.function.Function<ShardRequest, LayerPlan> plan;

        SplitBackend(java.util.function.Function<ShardRequest, LayerPlan> plan) {
            super(1);
            this.plan = plan;
        }

        @Override
        protected Optional<LayerSplit> layerSplit(TorchEnvironment environment, ShardRequest request) {
            LayerPlan planned = plan.apply(request);
            return Optional.of(new LayerSplit(Collections.nCopies(planned.devicesUsed(), "cpu"), planned));
        }
    }

    /**
     * The layers in {@code devices} nearly equal runs, the head after the last layer (or with the embedding when it is
     * tied), as {@link LayerPlan#plan} lays them out.
     */
    private static LayerPlan spread(ShardRequest request, int devices) {
        int layers = request.config().numLayers();
        int[] layerDevices = new int[layers];
        for (int layer = 0; layer < layers; layer++) {
            layerDevices[layer] = layer * devices / layers;
        }
        int head = request.config().tieWordEmbeddings() ? 0 : devices - 1;
        return new LayerPlan(0, layerDevices, head, new long[devices]);
    }

    private static final SplitBackend THREE_WAYS = new SplitBackend(request -> spread(request, 3));

    @Test
    void eachLayersWeightsAdaptersAndCacheAreOnTheDeviceThePlanGivesIt() {
        Fixture fixture = Fixture.load("tiny-qwen3-moe");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = THREE_WAYS.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            LayerPlan plan = spread(fixture.shardRequest(checkpoint, DType.F32), 3);
            assertEquals(3, model.deviceCount());
            int checked = 0;
            for (Parameter parameter : model.layout().parameters()) {
                Tensor placed = model.placed().placedTensors().get(parameter.name());
                int expected = parameter.layer() >= 0 ? plan.layerDevices()[parameter.layer()]
                        : parameter.role() == Role.EMBEDDING ? plan.embeddingDevice() : plan.headDevice();
                assertEquals(expected, device(placed), parameter.name());
                checked++;
            }
            assertTrue(checked > 3 * 10, "every parameter was checked: " + checked);
            assertEquals(2, plan.headDevice(), "an untied head goes after the last layer");

            for (LinearModule module : model.linearModules()) {
                model.setAdapter(module.name(),
                        LoraTest.factors(2, (int) module.inFeatures(), (int) module.outFeatures(), 1, 7));
                int layer = Integer.parseInt(module.name().split("\\.")[2]);
                LoraLinear.Adapter adapter = model.placed().linear(module.name()).adapter();
                assertEquals(plan.layerDevices()[layer], device(adapter.a()), module.name());
                assertEquals(plan.layerDevices()[layer], device(adapter.b()), module.name());
            }
            model.zeroAdapters();
            LoraLinear.Adapter zeroed = model.placed().linear(model.linearModules().getLast().name()).adapter();
            assertEquals(2, device(zeroed.b()), "a zeroed B is made on its layer's device");

            try (DecodeState state = DecodeState.allocate(model.ops(), model.layout(), 2, 8, DType.F32)) {
                for (int layer = 0; layer < state.states().size(); layer++) {
                    for (Tensor tensor : state.states().get(layer).tensors()) {
                        assertEquals(plan.layerDevices()[layer], device(tensor), "layer " + layer + "'s cache");
                    }
                }
            }
        }
    }

    @Test
    void anOpGivenATensorOfAnotherDeviceOfTheSplitRefusesIt() {
        Fixture fixture = Fixture.load("stories260k");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = THREE_WAYS.shard(fixture.shardRequest(checkpoint, DType.F32));
             TensorScope scope = model.ops().openScope()) {
            TorchOps first = model.ops();
            TorchOps last = first.forLayer(model.config().numLayers() - 1);
            Tensor here = first.constant(new float[] {1, 2}, 2);
            Tensor there = last.constant(new float[] {3, 4}, 2);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> first.add(here, there));
            assertEquals("a tensor of device 2 of the split reached an op of device 0 (cpu): it must cross with"
                    + " transfer()", e.getMessage());
            assertArrayEquals(new float[] {4, 6}, first.readFloats(first.add(here, first.transfer(there))));
            assertTrue(first.transfer(here) == here, "a tensor already on the device does not move");
        }
    }

    /** What crossed between devices: the residual stream is the only [B, T, hidden] float tensor that does. */
    private record Crossing(int from, int to, long[] shape, DType dtype) {
        boolean isResidualStream(int hidden) {
            return shape.length == 3 && shape[2] == hidden && dtype == DType.F32;
        }
    }

    @Test
    void theResidualStreamCrossesEachBoundaryOncePerStepAndTheStepsInputsOncePerDevice() {
        Fixture fixture = Fixture.load("stories260k");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = THREE_WAYS.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            List<Crossing> crossings = new ArrayList<>();
            model.ops().split().listen((from, to, shape, dtype) -> crossings.add(new Crossing(from, to, shape, dtype)));
            int steps = 4;
            DecodeRequest request = DecodeRequest.greedy(List.of(fixture.prompts().get(2)), steps, fixture.config());
            int[] tokens = WHOLE.decode(model, request).generations().getFirst().tokens();
            assertEquals(steps, tokens.length, "no stop token in these four");

            // stories260k: 5 layers on devices 0,0,1,1,2; the tied head back on device 0.
            int hidden = model.config().hiddenSize();
            List<Crossing> stream = crossings.stream().filter(c -> c.isResidualStream(hidden)).toList();
            List<String> perStep = List.of("0->1", "1->2", "2->0");
            List<String> expected = new ArrayList<>();
            for (int step = 0; step < steps; step++) {
                expected.addAll(perStep);
            }
            assertEquals(expected, stream.stream().map(c -> c.from() + "->" + c.to()).toList());
            for (int step = 0; step < steps; step++) {
                long length = step == 0 ? fixture.prompts().get(2).length : 1;
                assertArrayEquals(new long[] {1, length, hidden}, stream.get(3 * step).shape());
                assertArrayEquals(new long[] {1, 1, hidden}, stream.get(3 * step + 2).shape(),
                        "only the last position goes to the head");
            }
            // Into devices 1 and 2, besides the stream: the rotary rows (cos, sin), the mask and the three slot
            // tensors, once each per step, not once per layer or op. Nothing else crosses to the head.
            assertEquals(steps * (2 * (1 + 2 + 1 + 3) + 1), crossings.size(), crossings.toString());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen3", "tiny-gemma2", "tiny-qwen3-moe"})
    void aSplitModelComputesExactlyWhatTheWholeOneDoes(String name) {
        Fixture fixture = Fixture.load(name);
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel whole = WHOLE.shard(fixture.shardRequest(checkpoint, DType.F32));
             TorchModel split = THREE_WAYS.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            assertEquals(3, split.deviceCount());
            assertEquals(1, whole.deviceCount());
            List<int[]> prompts = fixture.prompts();
            DecodeRequest oneByOne = DecodeRequest.greedy(prompts, 12, fixture.config()).withBatchSize(1);
            assertSameGenerations(WHOLE.decode(whole, oneByOne), WHOLE.decode(split, oneByOne));
            // One batch of every prompt: left padding of different lengths, each row's cache on every device.
            DecodeRequest padded = oneByOne.withBatchSize(prompts.size());
            DecodeResult batched = WHOLE.decode(split, padded);
            assertSameGenerations(WHOLE.decode(whole, padded), batched);
            // The residual pass the abliteration reads: every boundary's residual, the final norm and the logits.
            ForwardRequest forward = new ForwardRequest(prompts, prompts.size());
            ForwardResult expected = WHOLE.forward(whole, forward);
            ForwardResult actual = WHOLE.forward(split, forward);
            assertEquals(expected.prompts(), actual.prompts());
            assertEquals(fixture.config().numLayers() + 1, actual.prompts().getFirst().residualCount());
        }
    }

    @Test
    void adaptersTheirResetAndTheMergeOfASplitModelMatchTheWholeModels() {
        Fixture fixture = Fixture.load("tiny-gemma2");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel whole = WHOLE.shard(fixture.shardRequest(checkpoint, DType.F32));
             TorchModel split = THREE_WAYS.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            long seed = 11;
            for (LinearModule module : whole.linearModules()) {
                if (module.name().endsWith("o_proj") || module.name().endsWith("down_proj")) {
                    LoraFactors factors = LoraTest.factors(2, (int) module.inFeatures(), (int) module.outFeatures(),
                            0.5, seed++);
                    whole.setAdapter(module.name(), factors);
                    split.setAdapter(module.name(), factors);
                }
            }
            DecodeRequest request = DecodeRequest.greedy(fixture.prompts(), 8, fixture.config());
            DecodeResult adapted = WHOLE.decode(whole, request);
            assertSameGenerations(adapted, WHOLE.decode(split, request));
            ForwardRequest forward = new ForwardRequest(fixture.prompts(), 2);
            assertEquals(WHOLE.forward(whole, forward).prompts(), WHOLE.forward(split, forward).prompts());

            try (MergedWeights expected = WHOLE.merge(whole, checkpoint);
                 MergedWeights actual = WHOLE.merge(split, checkpoint)) {
                assertEquals(expected.tensors().keySet(), actual.tensors().keySet());
                assertEquals(2 * fixture.config().numLayers(), actual.tensors().size());
                for (String tensor : expected.tensors().keySet()) {
                    HostTensor want = expected.tensors().get(tensor);
                    assertArrayEquals(want.toFloatArray(), actual.tensors().get(tensor).toFloatArray(), tensor);
                }
            }

            whole.zeroAdapters();
            split.zeroAdapters();
            DecodeResult reset = WHOLE.decode(split, request);
            assertSameGenerations(WHOLE.decode(whole, request), reset);
            assertTrue(!java.util.Arrays.equals(adapted.generations().getFirst().firstStepLogits(),
                    reset.generations().getFirst().firstStepLogits()), "the adapters changed the logits");
        }
    }

    @Test
    void aPlanFromFreeMemorySplitsOnlyWhatTheFirstDeviceCannotHold() {
        Fixture fixture = Fixture.load("tiny-qwen3");
        // Free memory per stand-in as a GPU would report it: the first holds a little more than half the model.
        SplitBackend planned = new SplitBackend(request -> {
            LayerPlan.Demand demand = LayerPlan.Demand.of(request.config(), request.dtype(), 64);
            long total = demand.embeddingBytes() + demand.headBytes() + demand.layerBytes().length
                    * (demand.layerBytes()[0] + demand.reservePerLayer());
            long free = (long) (total * 0.6 / 0.9);
            return LayerPlan.plan(demand, new long[] {free, free, free}, 0.1);
        });
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel whole = WHOLE.shard(fixture.shardRequest(checkpoint, DType.F32));
             TorchModel split = planned.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            assertEquals(2, split.deviceCount(), "two of the three stand-ins are enough");
            DecodeRequest request = DecodeRequest.greedy(fixture.prompts(), 8, fixture.config());
            assertSameGenerations(WHOLE.decode(whole, request), WHOLE.decode(split, request));
        }
    }

    @Test
    void aModelTheDevicesCannotHoldEvenSplitIsRefusedInOneLineBeforeAnythingIsRead() {
        Fixture fixture = Fixture.load("stories260k");
        SplitBackend tooSmall = new SplitBackend(request -> LayerPlan.plan(
                LayerPlan.Demand.of(request.config(), request.dtype(), 64), new long[] {100_000, 100_000}, 0.1));
        Checkpoint checkpoint = Checkpoint.open(fixture.directory());
        ShardRequest request = fixture.shardRequest(checkpoint, DType.F32);
        checkpoint.close(); // any read of a weight would now fail with another error
        UserInputException e = assertThrows(UserInputException.class, () -> tooSmall.shard(request));
        assertTrue(e.getMessage().matches("the model needs \\d+\\.\\d\\d GiB of weights and cache, more than the 2"
                + " devices can hold \\(0\\.00 GiB usable\\); use a 4-bit quantization or a smaller model"),
                e.getMessage());
    }

    private static void assertSameGenerations(DecodeResult expected, DecodeResult actual) {
        assertEquals(expected.generations().size(), actual.generations().size());
        for (int i = 0; i < expected.generations().size(); i++) {
            assertArrayEquals(expected.generations().get(i).tokens(), actual.generations().get(i).tokens(),
                    "prompt " + i);
            assertArrayEquals(expected.generations().get(i).firstStepLogits(),
                    actual.generations().get(i).firstStepLogits(), "prompt " + i);
        }
    }

    private static int device(Tensor tensor) {
        return ((TorchTensor) tensor).splitDevice();
    }
}
