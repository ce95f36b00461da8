package dev.crucible.torch.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.OptimizerSettings;
import dev.crucible.api.train.TrainerState;
import dev.crucible.api.train.TrainingBatch;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingSession;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Training on libtorch's CPU device, on the real stories260k model. */
class TorchTrainingSessionTest {

    private static final double LR = 1e-2;

    @Test
    void loraStartsAtTheBaseModelAndItsLossFalls() {
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession session = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 3), "cpu")) {
            TrainingBatch batch = Stories.batch();
            assertEquals((4 * 64 + 64 * 4) + (4 * 64 + 32 * 4) + (4 * 172 + 64 * 4), session.trainableParameters(),
                    "A [4, in] and B [out, 4] for q_proj, v_proj (32 wide: 4 kv heads) and down_proj");
            double before = session.evaluate(batch);
            for (int step = 0; step < 12; step++) {
                session.accumulate(batch, 1.0 / batch.labelledTokens());
                session.step(LR);
            }
            double after = session.evaluate(batch);
            assertTrue(after < 0.7 * before, "loss " + before + " -> " + after);
            assertEquals(12, session.completedSteps());
        }
    }

    /** With B = 0 the adapted model is the base model: its loss equals full training's untouched loss. */
    @Test
    void freshAdaptersLeaveTheModelUnchanged() {
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession lora = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 3), "cpu");
             TrainingSession full = TorchTrainingSession.start(Stories.full(checkpoint, OptimizerSettings.defaults()),
                     "cpu")) {
            assertEquals(full.evaluate(Stories.batch()), lora.evaluate(Stories.batch()), 1e-4);
        }
    }

    /**
     * AdamW's first step moves every parameter with a gradient by lr·g/(|g| + ε) ≈ ±lr: this is what bias
     * correction gives (without it the step would be about 3.2·lr). B starts at zero, so afterwards |B| = lr.
     */
    @Test
    void firstAdamStepMovesEachEntryByTheLearningRate() {
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession session = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 3), "cpu")) {
            session.accumulate(Stories.batch(), 1.0 / Stories.batch().labelledTokens());
            double norm = session.step(1e-3);
            assertTrue(norm > 0, "B's gradient is not zero even though B is");
            float[] b = session.adapters().get(Stories.VALUE).b().toFloatArray();
            int moved = 0;
            for (float value : b) {
                if (value != 0) {
                    assertEquals(1e-3, Math.abs(value), 1e-6);
                    moved++;
                }
            }
            assertTrue(moved > b.length / 2, moved + " of " + b.length + " entries moved");
        }
    }

    /**
     * Decoupled weight decay shrinks matrices by (1 − lr·λ) before the Adam update and leaves norm weights alone;
     * clipping scales the gradient but not Adam's first step (which only sees its sign).
     */
    @Test
    void fullTrainingDecaysMatricesOnlyAndMovesEveryWeightByAboutLr() {
        double lr = 1e-3;
        double decay = 0.5;
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession session = TorchTrainingSession.start(
                     Stories.full(checkpoint, OptimizerSettings.defaults().withWeightDecay(decay)), "cpu")) {
            session.accumulate(Stories.batch(), 1.0 / Stories.batch().labelledTokens());
            session.step(lr);
            Map<String, HostTensor> weights = session.weights();
            assertEquals(checkpoint.names().stream().filter(name -> !name.equals("lm_head.weight")).toList(),
                    List.copyOf(weights.keySet()), "every weight once, under its checkpoint name, tied head as embedding");
            checkStep(checkpoint.tensor("model.layers.1.mlp.up_proj.weight").toFloatArray(),
                    weights.get("model.layers.1.mlp.up_proj.weight").toFloatArray(), lr, 1 - lr * decay);
            checkStep(checkpoint.tensor("model.layers.1.input_layernorm.weight").toFloatArray(),
                    weights.get("model.layers.1.input_layernorm.weight").toFloatArray(), lr, 1.0);
        }
    }

    /** Every element moves by lr·|g|/(|g| + ε) ≤ lr; all but those with a vanishing gradient by lr itself. */
    private static void checkStep(float[] before, float[] after, double lr, double shrink) {
        int exact = 0;
        for (int i = 0; i < before.length; i++) {
            double moved = Math.abs(after[i] - before[i] * shrink);
            double tolerance = 2e-7 + 1e-6 * Math.abs(before[i]);
            assertTrue(moved <= lr + tolerance, "element " + i + " moved " + moved);
            if (Math.abs(moved - lr) <= tolerance) {
                exact++;
            }
        }
        assertTrue(exact > 0.95 * before.length, exact + " of " + before.length + " moved by lr");
    }

    /** Adapters stay float32 on a bf16 base, so an update far below bf16's resolution is kept. */
    @Test
    void adaptersStayFloat32OnABf16BaseAndKeepTinyUpdates() {
        double lr = 1e-6;
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession session = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.BF16, 5), "cpu")) {
            LoraFactors start = session.adapters().get(Stories.QUERY);
            assertEquals(DType.F32, start.a().dtype());
            assertEquals(DType.F32, start.b().dtype());
            float[] a0 = start.a().toFloatArray();
            // Two steps: the first moves only B (A's gradient is zero while B is), the second moves A.
            for (int step = 0; step < 2; step++) {
                session.accumulate(Stories.batch(), 1.0 / Stories.batch().labelledTokens());
                session.step(lr);
            }
            float[] a2 = session.adapters().get(Stories.QUERY).a().toFloatArray();
            int kept = 0;
            int lostInBf16 = 0;
            for (int i = 0; i < a0.length; i++) {
                if (a2[i] != a0[i]) {
                    kept++;
                    assertTrue(Math.abs(a2[i] - a0[i]) <= 1.01 * lr, "an Adam step moves at most lr");
                }
                if (bf16(a2[i]) == bf16(a0[i])) {
                    lostInBf16++;
                }
            }
            assertTrue(kept > a0.length / 2, kept + " of " + a0.length + " entries of A moved");
            assertTrue(lostInBf16 > a0.length * 9 / 10, "stored as bf16 the update would vanish: " + lostInBf16);
        }
    }

    private static float bf16(float value) {
        return HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(value));
    }

    @Test
    void sameSeedSameAdapterBytesOtherSeedOtherInitialization() {
        float[] first = trainedB(7);
        float[] second = trainedB(7);
        assertArrayEquals(first, second, "same seed, same thread count: bit for bit");
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession seven = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 7), "cpu");
             TrainingSession eight = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 8), "cpu")) {
            assertNotEquals(seven.adapters().get(Stories.DOWN).a(), eight.adapters().get(Stories.DOWN).a());
        }
    }

    private static float[] trainedB(long seed) {
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession session = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, seed), "cpu")) {
            for (int step = 0; step < 3; step++) {
                session.accumulate(Stories.batch(), 1.0 / Stories.batch().labelledTokens());
                session.step(LR);
            }
            return session.adapters().get(Stories.DOWN).b().toFloatArray();
        }
    }

    /** Stopping after two steps and restoring the state into a new session continues exactly. */
    @Test
    void restoredStateContinuesExactly() {
        float[] straight;
        TrainerState saved = null;
        try (Checkpoint checkpoint = Stories.open()) {
            try (TrainingSession session = TorchTrainingSession.start(
                    Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 2), "cpu")) {
                for (int step = 0; step < 4; step++) {
                    session.accumulate(Stories.batch(), 1.0 / Stories.batch().labelledTokens());
                    session.step(LR);
                    if (step == 1) {
                        saved = session.state();
                    }
                }
                straight = session.adapters().get(Stories.QUERY).b().toFloatArray();
            }
            try (TrainingSession resumed = TorchTrainingSession.start(
                    Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 99), "cpu")) {
                resumed.restore(saved);
                assertEquals(2, resumed.completedSteps());
                for (int step = 2; step < 4; step++) {
                    resumed.accumulate(Stories.batch(), 1.0 / Stories.batch().labelledTokens());
                    resumed.step(LR);
                }
                assertArrayEquals(straight, resumed.adapters().get(Stories.QUERY).b().toFloatArray());
            }
        }
    }

    /** Gradient accumulation over two micro-batches equals one batch holding both rows. */
    @Test
    void accumulatingMicroBatchesEqualsOneBatch() {
        TrainingBatch both = Stories.batch();
        TrainingBatch first = new TrainingBatch(both.tokens().subList(0, 1), both.labels().subList(0, 1));
        TrainingBatch second = new TrainingBatch(both.tokens().subList(1, 2), both.labels().subList(1, 2));
        double scale = 1.0 / both.labelledTokens();
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession whole = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 4), "cpu");
             TrainingSession parts = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 4), "cpu")) {
            double wholeLoss = whole.accumulate(both, scale);
            double wholeNorm = whole.step(LR);
            double partLoss = parts.accumulate(first, scale) + parts.accumulate(second, scale);
            double partNorm = parts.step(LR);
            assertEquals(wholeLoss, partLoss, 1e-4 * wholeLoss, "left padding does not change a row's loss");
            assertEquals(wholeNorm, partNorm, 1e-4 * wholeNorm);
        }
    }

    @Test
    void qloraQuantizesProjectionsAndStillLearns() {
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession qlora = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.QLORA, DType.F32, 3), "cpu");
             TrainingSession lora = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 3), "cpu")) {
            TrainingBatch batch = Stories.batch();
            double dense = lora.evaluate(batch);
            double before = qlora.evaluate(batch);
            assertNotEquals(dense, before, "the 4-bit base is not the dense one");
            assertEquals(dense, before, 0.25 * dense, "but close to it");
            for (int step = 0; step < 12; step++) {
                qlora.accumulate(batch, 1.0 / batch.labelledTokens());
                qlora.step(LR);
            }
            double after = qlora.evaluate(batch);
            assertTrue(after < 0.7 * before, "loss " + before + " -> " + after);
            assertEquals(DType.F32, qlora.adapters().get(Stories.DOWN).a().dtype());
        }
    }

    @Test
    void decodeUsesTheTrainedModel() {
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession session = TorchTrainingSession.start(
                     Stories.full(checkpoint, OptimizerSettings.defaults()), "cpu")) {
            TrainingBatch batch = Stories.batch();
            int[] row = batch.tokens().getFirst();
            int[] prompt = java.util.Arrays.copyOf(row, 8);
            DecodeRequest request = new DecodeRequest(List.of(prompt), 8, java.util.Set.of(), 0, 1);
            int[] before = session.decode(request).generations().getFirst().tokens();
            for (int step = 0; step < 30; step++) {
                session.accumulate(batch, 1.0 / batch.labelledTokens());
                session.step(3e-3);
            }
            int[] after = session.decode(request).generations().getFirst().tokens();
            assertNotEquals(java.util.Arrays.toString(before), java.util.Arrays.toString(after));
            assertArrayEquals(java.util.Arrays.copyOfRange(row, 8, 16), after, "it learned the continuation");
        }
    }

    @Test
    void adaptersAndWeightsBelongToTheirMethods() {
        try (Checkpoint checkpoint = Stories.open();
             TrainingSession lora = TorchTrainingSession.start(
                     Stories.lora(checkpoint, TrainingMethod.LORA, DType.F32, 3), "cpu")) {
            assertThrows(IllegalStateException.class, lora::weights);
            assertEquals(List.of(Stories.QUERY, Stories.VALUE, Stories.DOWN), List.copyOf(lora.adapters().keySet()));
            assertEquals(2.0, lora.adapters().get(Stories.QUERY).scale(), "alpha 8 / rank 4");
        }
    }
}
