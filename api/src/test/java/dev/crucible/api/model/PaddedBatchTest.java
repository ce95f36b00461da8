package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class PaddedBatchTest {

    @Test
    void leftPaddingAlignsLastTokensAndPositionsSkipThePadding() {
        PaddedBatch batch = PaddedBatch.leftPad(List.of(new int[] {1, 7, 8}, new int[] {1}), 2);
        assertEquals(3, batch.length());
        assertArrayEquals(new long[] {1, 7, 8, 2, 2, 1}, batch.tokens());
        assertArrayEquals(new long[] {0, 2}, batch.padding());
        assertArrayEquals(new long[] {0, 1, 2, 0, 0, 0}, batch.positions(0, 3));
        assertArrayEquals(new long[] {3, 1}, batch.positions(3, 1), "the first generated token of each row");
    }

    @Test
    void batchesGroupSimilarLengthsLongestFirst() {
        List<int[]> prompts = List.of(new int[1], new int[5], new int[3], new int[4], new int[2]);
        List<int[]> chunks = ModelRunner.chunksByLength(prompts, 2);
        assertEquals(3, chunks.size());
        assertArrayEquals(new int[] {1, 3}, chunks.get(0));
        assertArrayEquals(new int[] {2, 4}, chunks.get(1));
        assertArrayEquals(new int[] {0}, chunks.get(2));
    }
}
