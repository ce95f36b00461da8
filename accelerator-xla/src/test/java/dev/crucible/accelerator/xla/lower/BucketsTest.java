package dev.crucible.accelerator.xla.lower;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Rows per batch and the copies that fill the last one. */
class BucketsTest {

    @Test
    void rowsSpreadThePromptsEvenlyInAPowerOfTwoNoMoreThanAllowed() {
        assertEquals(1, Buckets.rows(1, 64), "one prompt, one row");
        assertEquals(4, Buckets.rows(3, 64));
        assertEquals(64, Buckets.rows(100, 64), "two batches of 50 prompts, rounded up to 64");
        assertEquals(40, Buckets.rows(100, 40), "three batches of 34, rounded up to 64, held to 40");
        assertEquals(2, Buckets.rows(5, 2));
        assertEquals(20, Buckets.rows(50, 20), "a batch size that is no power of two is kept");
    }

    @Test
    void theLastBatchIsFilledWithTheShortestPrompt() {
        List<int[]> prompts = List.of(new int[] {1, 2, 3}, new int[] {4}, new int[] {5, 6});
        List<int[]> filled = Buckets.filled(prompts, 2);
        assertEquals(4, filled.size());
        assertSame(prompts.get(1), filled.get(3));
        assertSame(prompts, Buckets.filled(prompts, 3), "nothing to fill");
    }
}
