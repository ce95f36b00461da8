package dev.crucible.torch.policy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.UserInputException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class LayerPlanTest {
    private static final long GIB = 1L << 30;

    private static LayerPlan.Demand layers(int count, long each, long embedding, long head, boolean tied) {
        long[] bytes = new long[count];
        Arrays.fill(bytes, each);
        return new LayerPlan.Demand(embedding, bytes, head, tied, 0);
    }

    @Test
    void aModelThatFitsOneDeviceStaysOnIt() {
        LayerPlan plan = LayerPlan.plan(layers(4, GIB, GIB, GIB, false), new long[] {80 * GIB, 80 * GIB}, 0.1);
        assertEquals(1, plan.devicesUsed());
        assertArrayEquals(new int[] {0, 0, 0, 0}, plan.layerDevices());
        assertEquals("cuda:0 embedding, layers 0-3, head (6.00 GiB)", plan.describe("cuda:"));
    }

    @Test
    void layersFillEachDeviceInOrderBeforeTheNext() {
        // 10 GiB usable on each of three devices: embedding + 4 layers, then 5 layers, then the rest and the head.
        LayerPlan plan = LayerPlan.plan(layers(12, 2 * GIB, 2 * GIB, GIB, false),
                new long[] {10 * GIB, 10 * GIB, 10 * GIB}, 0.0);
        assertArrayEquals(new int[] {0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2}, plan.layerDevices());
        assertEquals(2, plan.headDevice());
        assertEquals("cuda:0 embedding, layers 0-3 (10.00 GiB); cuda:1 layers 4-8 (10.00 GiB);"
                + " cuda:2 layers 9-11, head (7.00 GiB)", plan.describe("cuda:"));
    }

    @Test
    void headroomAndTheKvReserveCountAgainstEachDevice() {
        long[] bytes = new long[4];
        Arrays.fill(bytes, 2 * GIB);
        // 8 GiB × 0.75 = 6 GiB usable: 1 + (2 + 0.5) + (2 + 0.5) fits, a third layer does not.
        LayerPlan plan = LayerPlan.plan(new LayerPlan.Demand(GIB, bytes, GIB, false, GIB / 2),
                new long[] {8 * GIB, 8 * GIB}, 0.25);
        assertArrayEquals(new int[] {0, 0, 1, 1}, plan.layerDevices());
    }

    @Test
    void aTiedHeadStaysWithTheEmbedding() {
        LayerPlan plan = LayerPlan.plan(layers(4, 4 * GIB, GIB, 1024, true), new long[] {10 * GIB, 10 * GIB}, 0.0);
        assertArrayEquals(new int[] {0, 0, 1, 1}, plan.layerDevices());
        assertEquals(0, plan.headDevice());
        assertEquals("cuda:0 embedding, layers 0-1, head (9.00 GiB); cuda:1 layers 2-3 (8.00 GiB)",
                plan.describe("cuda:"));
    }

    @Test
    void aModelTheDevicesCannotHoldTogetherIsOneLine() {
        UserInputException e = assertThrows(UserInputException.class,
                () -> LayerPlan.plan(layers(10, 4 * GIB, GIB, GIB, false), new long[] {16 * GIB, 16 * GIB}, 0.0));
        assertEquals("the model needs 42.00 GiB of weights and cache, more than the 2 devices can hold (32.00 GiB"
                + " usable); use a 4-bit quantization or a smaller model", e.getMessage());
    }
}
