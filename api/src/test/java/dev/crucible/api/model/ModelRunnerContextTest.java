package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.RecordingOps;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The runner is the last line before sizes become tensor shapes: a request that does not fit the model's context
 * is refused before a single op runs (a 1 MB prompt once asked libtorch for a 1 TB attention mask).
 */
class ModelRunnerContextTest {

    /** Runs {@code body} on stories260k (context 512) and returns how many ops it recorded. */
    private static int ops(Consumer<ModelRunner> body) {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("stories260k"));
             ModelRunner runner = new ModelRunner(ops, ModelFixtures.shapes(config, checkpoint, ops), ShapePolicy.EXACT)) {
            int before = ops.trace().size();
            body.accept(runner);
            return ops.trace().size() - before;
        }
    }

    private static DecodeRequest decode(int promptTokens, int maxNewTokens) {
        return new DecodeRequest(List.of(new int[] {1, 2}, new int[promptTokens]), maxNewTokens, Set.of(), 0, 0);
    }

    @Test
    void aPromptBeyondTheContextIsRefusedNamingItsSize() {
        UserInputException e = assertThrows(UserInputException.class,
                () -> ops(runner -> runner.decode(decode(1_000_000, 4), 2)));
        assertEquals("prompt 2 of the request needs 1,000,004 tokens (1,000,000 of prompt, 4 to generate), more than"
                + " the model's context of 512 tokens", e.getMessage());
        UserInputException forward = assertThrows(UserInputException.class,
                () -> ops(runner -> runner.forward(new ForwardRequest(List.of(new int[513]), 0), 1)));
        assertEquals("prompt 1 of the request is 513 tokens, more than the model's context of 512 tokens",
                forward.getMessage());
    }

    @Test
    void noOpRunsForARefusedRequest() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("stories260k"));
             ModelRunner runner = new ModelRunner(ops, ModelFixtures.shapes(config, checkpoint, ops), ShapePolicy.EXACT)) {
            int before = ops.trace().size();
            assertThrows(UserInputException.class, () -> runner.decode(decode(1_000_000, 4), 2));
            // max_new_tokens near 2^31 overflowed the int cache size into a negative one that passed the old check.
            assertThrows(UserInputException.class, () -> runner.decode(decode(5, Integer.MAX_VALUE), 2));
            assertEquals(before, ops.trace().size(), "nothing was allocated or computed");
        }
    }

    @Test
    void aSequenceOfExactlyTheContextRuns() {
        assertTrue(ops(runner -> runner.decode(decode(508, 4), 2)) > 0);
        assertTrue(ops(runner -> runner.forward(new ForwardRequest(List.of(new int[512]), 0), 1)) > 0);
    }
}
