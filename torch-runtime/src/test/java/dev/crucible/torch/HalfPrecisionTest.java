package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.Activations;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * bf16 and f16 compute stay close to the float32 goldens and pick the same first token. Bounds are about twice
 * the largest difference measured over all first-step logits (libtorch 2.10 CPU): stories260k (trained, logits up
 * to 17) bf16 0.21, f16 0.024; tiny-qwen3 (random weights, logits up to 95) f16 0.42. tiny-qwen3 in bf16 differs
 * by up to 3.0 and flips the top token on 2 of 5 prompts, whose margins are as small as 0.02: its README warns
 * that half precision may not reproduce its ids, so it is not asserted here.
 */
class HalfPrecisionTest {

    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);

    @ParameterizedTest
    @CsvSource({"stories260k, BF16, 0.4", "stories260k, F16, 0.05", "tiny-qwen3, F16, 0.8",
            // Measured here: 0.33, 1.95 and 0.64 (logits span about 48), top-1 agreeing on every case.
            "tiny-qwen3-moe, BF16, 0.5", "tiny-mixtral, BF16, 3.0", "tiny-lfm2, BF16, 1.0"})
    void logitsStayCloseToFloat32Goldens(String name, DType dtype, double bound) {
        Fixture fixture = Fixture.load(name);
        double worst = 0;
        int topAgree = 0;
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, dtype))) {
            assertEquals(dtype, model.dtype());
            for (Fixture.Case golden : fixture.cases()) {
                Activations activations = BACKEND.forward(model, ForwardRequest.of(java.util.List.of(golden.promptIds())))
                        .prompts().getFirst();
                float[] logits = activations.logits();
                for (int i = 0; i < logits.length; i++) {
                    worst = Math.max(worst, Math.abs(logits[i] - golden.firstStepLogits()[i]));
                }
                if (argmax(logits) == golden.generatedIds()[0]) {
                    topAgree++;
                }
            }
        }
        System.out.printf("%s %s: largest first-step logit difference to float32 goldens %.4f, top-1 agrees %d/%d%n",
                name, dtype, worst, topAgree, fixture.cases().size());
        assertTrue(worst <= bound, name + " " + dtype + ": logits differ by " + worst + " > " + bound);
        assertEquals(fixture.cases().size(), topAgree, "top-1 agrees on " + topAgree + " cases only");
    }

    private static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }
}
