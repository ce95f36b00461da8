package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.RecordingOps;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A decode batch whose rows stop carries on with the rest: on an eager backend the stopped rows leave the steps
 * once a quarter of them stopped (a small model's trial spent a third of its decode steps on rows that had
 * finished); on a compiling one every step keeps the batch's shape. The tokens are scripted, so which rows the
 * steps computed is the only difference, and each row's tokens are the same either way.
 */
class FinishedRowsTest {
    private static final int STOP = 9;
    private static final int TOKEN = 5;

    /** The rows of every decode step, and the generations, of four prompts whose first and second rows stop. */
    private record Run(List<Long> stepRows, List<Generation> generations) { }

    private static Run run(ShapePolicy shapes) {
        return run(shapes, StopCondition.NONE);
    }

    private static Run run(ShapePolicy shapes, StopCondition settled) {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        RecordingOps ops = new RecordingOps();
        List<Long> rows = new ArrayList<>();
        // Reads: the prefill's ids, then one per decode step. Row 0 stops at the first decode step, the first of
        // the rows still computed at the third.
        ops.onLongReads(shape -> {
            int read = rows.size();
            rows.add(shape.dims()[0]);
            long[] ids = new long[Math.toIntExact(shape.dims()[0])];
            java.util.Arrays.fill(ids, TOKEN);
            if (read == 1 || read == 3) {
                ids[read == 1 ? 0 : firstRunning(shape)] = STOP;
            }
            return ids;
        });
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("stories260k"));
             ModelRunner runner = new ModelRunner(ops, ModelFixtures.shapes(config, checkpoint, ops), shapes)) {
            // One length, so the batch's rows are the prompts in order.
            List<int[]> prompts = List.of(new int[] {1, 2, 3}, new int[] {1, 4, 5}, new int[] {1, 5, 6}, new int[] {1, 7, 8});
            List<Generation> generations = runner.decode(new DecodeRequest(prompts, 6, Set.of(STOP), 0, 4)
                            .withStopCondition(settled), 4)
                    .generations();
            return new Run(rows.subList(1, rows.size()), generations);
        }
    }

    /** With every row still in the steps (a compiling backend) row 0 stopped already, so row 1 stops. */
    private static int firstRunning(RecordingOps.Shape shape) {
        return shape.dims()[0] == 4 ? 1 : 0;
    }

    @Test
    void stoppedRowsLeaveTheStepsOfAnEagerBackend() {
        Run eager = run(ShapePolicy.EXACT);
        // Step 1 has all four; row 0 stopped (3 of 4 running: a quarter stopped), so steps 2-3 have three; the
        // next stop leaves two of three running and steps 4-5 two.
        assertEquals(List.of(4L, 3L, 3L, 2L, 2L), eager.stepRows());
        assertTokens(eager.generations());
    }

    @Test
    void aCompilingBackendKeepsEveryRowToTheEnd() {
        Run compiled = run(new ShapePolicy(1, 1, true));
        assertEquals(List.of(4L, 4L, 4L, 4L, 4L), compiled.stepRows());
        assertTokens(compiled.generations());
    }

    private static void assertTokens(List<Generation> generations) {
        assertArrayEquals(new int[] {TOKEN, STOP}, generations.get(0).tokens());
        assertArrayEquals(new int[] {TOKEN, TOKEN, TOKEN, STOP}, generations.get(1).tokens());
        for (int row = 2; row < 4; row++) {
            assertArrayEquals(new int[] {TOKEN, TOKEN, TOKEN, TOKEN, TOKEN, TOKEN}, generations.get(row).tokens(),
                    "row " + row);
        }
        assertEquals(List.of(true, true, false, false), generations.stream().map(Generation::stopped).toList());
    }

    /**
     * A stop condition ends a row like a stop token does (it leaves the eager steps with the rows that stopped), but
     * its generation keeps every token and is not {@link Generation#stopped()}: here prompt 2 is settled by its
     * second token. The condition sees each running row's tokens after each step, never a row's stop token, never
     * a row again once it ended, and not at the length limit (6 tokens), where every row ends anyway.
     */
    @Test
    void aStopConditionEndsARowWithTheTokensItHas() {
        for (ShapePolicy shapes : List.of(ShapePolicy.EXACT, new ShapePolicy(1, 1, true))) {
            List<String> asked = Collections.synchronizedList(new ArrayList<>());
            Run run = run(shapes, (prompt, tokens) -> {
                asked.add(prompt + ":" + tokens.length);
                for (int token : tokens) {
                    assertEquals(TOKEN, token);
                }
                return prompt == 2 && tokens.length == 2;
            });
            List<Generation> generations = run.generations();
            assertArrayEquals(new int[] {TOKEN, STOP}, generations.get(0).tokens());
            assertArrayEquals(new int[] {TOKEN, TOKEN, TOKEN, STOP}, generations.get(1).tokens());
            assertArrayEquals(new int[] {TOKEN, TOKEN}, generations.get(2).tokens());
            assertArrayEquals(new int[] {TOKEN, TOKEN, TOKEN, TOKEN, TOKEN, TOKEN}, generations.get(3).tokens());
            assertEquals(List.of(true, true, false, false), generations.stream().map(Generation::stopped).toList());
            // Rows 0 and 2 end at the first decode step: half the batch, so the eager steps drop both at once.
            assertEquals(shapes.dropsFinishedRows() ? List.of(4L, 2L, 2L, 1L, 1L) : List.of(4L, 4L, 4L, 4L, 4L),
                    run.stepRows(), "rows per decode step");
            assertEquals(List.of("0:1", "1:1", "2:1", "3:1", "1:2", "2:2", "3:2", "1:3", "3:3", "3:4", "3:5"), asked);
        }
    }
}
