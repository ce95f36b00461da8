package dev.crucible.torch.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BatchSizeSearchTest {

    /**
     * A device whose batches take a fixed time plus a time per prompt (so bigger batches are faster per prompt until
     * {@code saturatedAt}, where each extra prompt costs as much as one alone), and that runs out of memory above
     * {@code memoryFor} prompts with libtorch's message.
     */
    private static final class FakeDevice {
        final int memoryFor;
        final int saturatedAt;
        final List<Integer> ran = new ArrayList<>();
        int cacheReleases;

        FakeDevice(int memoryFor, int saturatedAt) {
            this.memoryFor = memoryFor;
            this.saturatedAt = saturatedAt;
        }

        double run(int batch) {
            ran.add(batch);
            if (batch > memoryFor) {
                throw new RuntimeException("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total)");
            }
            return 1.0 + (batch <= saturatedAt ? 0.01 * batch : 0.01 * saturatedAt + 0.5 * (batch - saturatedAt));
        }

        BatchSizeSearch.Result search(int cap) {
            return BatchSizeSearch.search(cap, this::run, e -> e.getMessage().contains("out of memory"),
                    () -> cacheReleases++);
        }
    }

    @Test
    void sizesArePowersOfTwoUpToTheCap() {
        assertEquals(List.of(1, 2, 4, 8), BatchSizeSearch.sizes(8));
        assertEquals(List.of(1, 2, 4, 8, 12), BatchSizeSearch.sizes(12));
        assertEquals(List.of(1), BatchSizeSearch.sizes(1));
    }

    @Test
    void theSearchStopsAtTheFirstOutOfMemoryAndKeepsTheFastestThatRan() {
        FakeDevice device = new FakeDevice(20, 1000);
        BatchSizeSearch.Result result = device.search(128);
        assertEquals(List.of(1, 2, 4, 8, 16, 32), device.ran, "nothing is tried after the first out-of-memory");
        assertEquals(16, result.chosen());
        assertTrue(result.trials().getLast().outOfMemory());
        assertEquals(1, device.cacheReleases, "what the failed batch cached is released once");
    }

    @Test
    void biggerIsNotKeptWhenItIsSlowerPerPrompt() {
        FakeDevice device = new FakeDevice(Integer.MAX_VALUE, 8);
        BatchSizeSearch.Result result = device.search(64);
        assertEquals(List.of(1, 2, 4, 8, 16, 32, 64), device.ran);
        assertEquals(8, result.chosen(), "past saturation each batch adds more time than it saves");
        assertEquals(0, device.cacheReleases);
    }

    @Test
    void otherFailuresEndTheSearchAsThemselves() {
        IllegalStateException failure = assertThrows(IllegalStateException.class, () -> BatchSizeSearch.search(8,
                batch -> {
                    throw new IllegalStateException("index out of range");
                }, e -> e.getMessage().contains("out of memory"), () -> { }));
        assertEquals("index out of range", failure.getMessage());
    }

    @Test
    void runningOutOfMemoryWithOnePromptIsOneLineForTheUser() {
        UserInputException e = assertThrows(UserInputException.class, () -> new FakeDevice(0, 1).search(8));
        assertEquals("the device runs out of memory with one prompt per batch (CUDA out of memory. Tried to allocate"
                + " 2.00 GiB (GPU 0; 79.11 GiB total)); use a smaller model, a 4-bit quantization or shorter prompts",
                e.getMessage());
    }

    @Test
    void theTableShowsEverySizeTriedAndTheOneKept() {
        String table = new FakeDevice(3, 1000).search(16).table();
        assertTrue(table.contains("out of memory"), table);
        List<String> kept = table.lines().filter(l -> l.contains("<- kept")).toList();
        assertEquals(1, kept.size(), table);
        assertTrue(kept.getFirst().matches("\\|\\s+2 \\|.*"), table);
    }
}
