package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.LoraLinear;
import dev.crucible.api.model.ResidualHook;
import dev.crucible.api.model.RotaryEmbedding;
import dev.crucible.api.model.Step;
import dev.crucible.api.model.Transformer;
import dev.crucible.api.model.TransformerWeights;
import dev.crucible.api.model.WeightSource;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The same model definition runs with autograd on (what LoRA fine-tuning needs): gradients reach the adapter
 * factors through every layer, and frozen base weights get none.
 */
class AutogradTest {

    @Test
    void lossGradientsReachLoraFactorsAndNotFrozenWeights() {
        Fixture fixture = Fixture.load("stories260k");
        TorchRuntime.setThreads(1);
        try (TorchOps ops = new TorchOps("cpu", false);
             Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TensorScope scope = ops.openScope()) {
            TransformerWeights weights = TransformerWeights.bind(fixture.config(), WeightSource.of(checkpoint,
                    name -> new TorchTensor(HostTransfer.toDevice(checkpoint.tensor(name), DType.F32, ops.device()))));
            LoraLinear value = weights.linear("model.layers.0.self_attn.v_proj");
            Tensor a = trainable(ops, 4, 64, 1);
            Tensor b = trainable(ops, 32, 4, 2);
            value.setAdapter(a, b, 0.5);

            int length = 6;
            RotaryEmbedding rotary = new RotaryEmbedding(fixture.config());
            long[] slots = {0, 1, 2, 3, 4, 5};
            Step step = new Step(
                    ops.constant(new long[] {1, 403, 407, 261, 378, 432}, 1, length),
                    ops.constant(slots, 1, length),
                    ops.constant(slots, length),
                    ops.constant(slots, length),
                    ops.constant(new long[] {0}, 1),
                    ops.constant(rotary.cosTable(length), length, 8),
                    ops.constant(rotary.sinTable(length), length, 8),
                    true);
            Tensor logits = new Transformer(fixture.config(), weights).forward(ops, step, ResidualHook.NONE);
            assertArrayEquals(new long[] {1, length, 512}, logits.shape(), "training needs every position's logits");

            handle(ops.logSoftmax(logits, -1)).sum().backward();
            assertTrue(maxAbs(handle(a).grad()) > 0, "A gets a gradient");
            assertTrue(maxAbs(handle(b).grad()) > 0, "B gets a gradient");
            assertFalse(handle(value.weight()).grad().defined(), "the frozen base weight gets none");
        }
    }

    private static TorchTensor trainable(TorchOps ops, int rows, int columns, long seed) {
        Random random = new Random(seed);
        float[] values = new float[rows * columns];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextGaussian() * 0.1f;
        }
        TorchTensor tensor = (TorchTensor) ops.constant(values, rows, columns);
        tensor.handle().set_requires_grad(true);
        return tensor;
    }

    private static org.bytedeco.pytorch.Tensor handle(dev.crucible.api.tensor.Tensor tensor) {
        return ((TorchTensor) tensor).handle();
    }

    private static double maxAbs(org.bytedeco.pytorch.Tensor tensor) {
        return tensor.abs().max().item_double();
    }
}
