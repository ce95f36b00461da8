package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.Activations;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Prompts that begin alike (a chat template's system turn) share that prefix's computation in a batch: computed
 * once, spread over the rows' caches. A row must come out as it does alone - generated tokens exactly, first-step
 * logits and the forward pass's residuals within the fixture's tolerance - for every family (LFM2's convolution
 * state takes the unshared path and must too).
 */
class SharedPrefixTest {

    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);

    /** Every golden prompt behind the same 12 leading tokens (the first prompt's tokens, repeated). */
    private static List<int[]> prompts(Fixture fixture) {
        int[] seed = fixture.prompts().getFirst();
        int[] prefix = IntStream.range(0, 12).map(i -> seed[i % seed.length]).toArray();
        List<int[]> prompts = new ArrayList<>();
        for (int[] prompt : fixture.prompts()) {
            int[] joined = java.util.Arrays.copyOf(prefix, prefix.length + prompt.length);
            System.arraycopy(prompt, 0, joined, prefix.length, prompt.length);
            prompts.add(joined);
        }
        return prompts;
    }

    @ParameterizedTest
    @MethodSource("dev.crucible.torch.GoldenTest#everyFixture")
    void aBatchSharingAPrefixDecodesAndForwardsEachRowAsAlone(String name) {
        Fixture fixture = Fixture.load(name);
        List<int[]> prompts = prompts(fixture);
        int pad = DecodeRequest.defaultPadToken(fixture.config());
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            List<Generation> batched = BACKEND.decode(model,
                    new DecodeRequest(prompts, 12, Set.of(), pad, prompts.size())).generations();
            List<Activations> forward = BACKEND.forward(model, new ForwardRequest(prompts, prompts.size())).prompts();
            for (int i = 0; i < prompts.size(); i++) {
                String where = name + " row " + i;
                Generation alone = BACKEND.decode(model,
                        new DecodeRequest(List.of(prompts.get(i)), 12, Set.of(), pad, 1)).generations().getFirst();
                assertArrayEquals(alone.tokens(), batched.get(i).tokens(), where);
                GoldenTest.assertClose(alone.firstStepLogits(), batched.get(i).firstStepLogits(),
                        fixture.logitsTolerance(), where + " first step");
                Activations single = BACKEND.forward(model, new ForwardRequest(List.of(prompts.get(i)), 1))
                        .prompts().getFirst();
                GoldenTest.assertClose(single.logits(), forward.get(i).logits(), fixture.logitsTolerance(),
                        where + " forward");
                assertEquals(single.residualCount(), forward.get(i).residualCount(), where);
                for (int boundary = 0; boundary < single.residualCount(); boundary++) {
                    GoldenTest.assertClose(single.residual(boundary), forward.get(i).residual(boundary),
                            fixture.logitsTolerance(), where + " residual " + boundary);
                }
            }
        }
    }
}
