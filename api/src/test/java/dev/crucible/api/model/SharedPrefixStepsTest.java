package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.RecordingOps;
import java.util.List;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Which steps a batch whose prompts begin alike runs (the program list a tracer would compile): on an eager backend
 * the shared tokens once, as one row, then every row from the first slot after them; below eight shared tokens, or
 * on a compiling backend, the whole prompt for every row. The numbers each row gets are compared with its unshared
 * run in torch-runtime's {@code SharedPrefixTest}.
 */
class SharedPrefixStepsTest {

    /** Three prompts of {@code shared} common tokens then 2, 3 and 1 of their own. */
    private static List<int[]> prompts(int shared) {
        int[] prefix = IntStream.range(0, shared).map(i -> 10 + i).toArray();
        return List.of(join(prefix, 50, 51), join(prefix, 60, 61, 62), join(prefix, 70));
    }

    private static int[] join(int[] prefix, int... own) {
        int[] joined = java.util.Arrays.copyOf(prefix, prefix.length + own.length);
        System.arraycopy(own, 0, joined, prefix.length, own.length);
        return joined;
    }

    /** The first input (the tokens) of every program {@code body} ran, as "key I64[rows, tokens]". */
    private static List<String> steps(ShapePolicy shapes, BiConsumer<ModelRunner, RecordingOps> body) {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("stories260k"));
             ModelRunner runner = new ModelRunner(ops, ModelFixtures.shapes(config, checkpoint, ops), shapes)) {
            body.accept(runner, ops);
            return ops.programs().stream().map(program -> program.substring(0, program.indexOf(']') + 1)
                    .replace(" [", " ")).toList();
        }
    }

    private static List<String> decode(ShapePolicy shapes, int shared) {
        return steps(shapes, (runner, ops) -> runner.decode(new DecodeRequest(prompts(shared), 2, Set.of(), 0, 3), 3));
    }

    @Test
    void tenSharedTokensRunOnceAndEachRowFromTheSlotAfterThem() {
        // 13 slots (10 shared + the longest row's 3): the prefix as one row of 10, then 3 slots of every row.
        assertEquals(List.of("prefix I64[1, 10]", "prefill I64[3, 3]", "decode I64[3, 1]"),
                decode(ShapePolicy.EXACT, 10));
        assertEquals(List.of("prefix I64[1, 10]", "forward I64[3, 3]"), steps(ShapePolicy.EXACT,
                (runner, ops) -> runner.forward(new ForwardRequest(prompts(10), 3), 3)));
    }

    @Test
    void fewerThanEightSharedTokensOrACompilingBackendRunTheWholePrompt() {
        assertEquals(List.of("prefill I64[3, 10]", "decode I64[3, 1]"), decode(ShapePolicy.EXACT, 7));
        assertEquals(List.of("prefill I64[3, 13]", "decode I64[3, 1]"), decode(new ShapePolicy(1, 1, true), 10));
    }
}
