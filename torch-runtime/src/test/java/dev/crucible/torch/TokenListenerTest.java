package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.Generation;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A decode streams each step's tokens to the request's listener, naming prompts by their request index. */
class TokenListenerTest {

    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);

    @Test
    void everyTokenArrivesOnceInOrderAndStoppedRowsFallSilent() {
        Fixture fixture = Fixture.load("stories260k");
        Fixture.Case shortPrompt = fixture.cases().get(1);
        Fixture.Case longPrompt = fixture.cases().get(2);
        int stop = shortPrompt.generatedIds()[5];
        List<int[]> prompts = List.of(shortPrompt.promptIds(), longPrompt.promptIds(), shortPrompt.promptIds());
        List<List<Integer>> heard = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        List<Integer> rowsPerStep = new ArrayList<>();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            DecodeRequest request = new DecodeRequest(prompts, 20, Set.of(stop),
                    DecodeRequest.defaultPadToken(fixture.config()), 2, (indexes, tokens) -> {
                        assertEquals(indexes.length, tokens.length);
                        rowsPerStep.add(indexes.length);
                        for (int i = 0; i < indexes.length; i++) {
                            heard.get(indexes[i]).add(tokens[i]);
                        }
                    });
            List<Generation> generations = BACKEND.decode(model, request).generations();
            for (int prompt = 0; prompt < prompts.size(); prompt++) {
                assertArrayEquals(generations.get(prompt).tokens(),
                        heard.get(prompt).stream().mapToInt(Integer::intValue).toArray(), "prompt " + prompt);
            }
            // Prompt 0 stops at its sixth token: from the seventh step on, its batch reports one row fewer.
            assertEquals(6, generations.get(0).tokens().length);
            int steps = rowsPerStep.stream().mapToInt(Integer::intValue).sum();
            assertEquals(generations.stream().mapToInt(g -> g.tokens().length).sum(), steps);
        }
    }
}
