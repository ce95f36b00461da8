package dev.crucible.torch.policy;

import com.github.freva.asciitable.AsciiTable;
import com.github.freva.asciitable.Column;
import com.github.freva.asciitable.HorizontalAlign;
import dev.crucible.api.UserInputException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;
import java.util.function.IntToDoubleFunction;
import java.util.function.Predicate;

/**
 * Batch size {@code 0} (auto) on a GPU, and on the CPU for models of 20 M parameters or more: batches of 1, 2, 4, ... prompts up to a cap are each run once and timed,
 * the search stops at the first that runs out of device memory, and the size with the most prompts per second is
 * kept. Bigger is not always faster: past the point where the device is busy, padding and the KV cache only add
 * work, and near the memory limit the allocator starts to thrash, so the sizes are measured, not assumed.
 */
public final class BatchSizeSearch {

    private BatchSizeSearch() {
    }

    /**
     * One size tried.
     *
     * @param seconds how long its batch took; empty when it ran out of memory
     */
    public record Trial(int batchSize, OptionalDouble seconds) {
        public boolean outOfMemory() {
            return seconds.isEmpty();
        }

        /** Prompts per second; 0 for a size that ran out of memory. */
        public double promptsPerSecond() {
            return seconds.isPresent() ? batchSize / Math.max(seconds.getAsDouble(), 1e-9) : 0;
        }
    }

    /** The sizes tried, in order, and the one chosen. */
    public record Result(int chosen, List<Trial> trials) {
        public Result {
            trials = List.copyOf(trials);
        }

        /** The table users see: size, seconds, prompts per second, and which size was kept. */
        public String table() {
            return AsciiTable.getTable(AsciiTable.BASIC_ASCII_NO_DATA_SEPARATORS, trials, List.of(
                    new Column().header("batch size").dataAlign(HorizontalAlign.RIGHT)
                            .with(t -> Integer.toString(t.batchSize())),
                    new Column().header("seconds").dataAlign(HorizontalAlign.RIGHT)
                            .with(t -> t.outOfMemory() ? "out of memory"
                                    : String.format(Locale.ROOT, "%.3f", t.seconds().getAsDouble())),
                    new Column().header("prompts/s").dataAlign(HorizontalAlign.RIGHT)
                            .with(t -> t.outOfMemory() ? "-" : String.format(Locale.ROOT, "%.1f", t.promptsPerSecond())),
                    new Column().header("").dataAlign(HorizontalAlign.LEFT)
                            .with(t -> t.batchSize() == chosen ? "<- kept" : "")));
        }
    }

    /** The sizes tried: powers of two from 1 up to {@code cap}, the cap itself last when it is not one. */
    public static List<Integer> sizes(int cap) {
        if (cap < 1) {
            throw new IllegalArgumentException("cap must be at least 1, got " + cap);
        }
        List<Integer> sizes = new ArrayList<>();
        for (int size = 1; size < cap; size *= 2) {
            sizes.add(size);
        }
        sizes.add(cap);
        return sizes;
    }

    /**
     * Runs the search.
     *
     * @param cap          the largest size tried
     * @param run          runs one batch of that many prompts and returns the seconds it took; throws when the device
     *                     runs out of memory
     * @param outOfMemory  recognizes the device's out-of-memory failure among the exceptions {@code run} throws
     *                     (anything else ends the search and is rethrown)
     * @param afterOutOfMemory frees what the failed batch left cached, before the chosen size is used
     */
    public static Result search(int cap, IntToDoubleFunction run, Predicate<RuntimeException> outOfMemory,
                                Runnable afterOutOfMemory) {
        List<Trial> trials = new ArrayList<>();
        for (int size : sizes(cap)) {
            try {
                trials.add(new Trial(size, OptionalDouble.of(run.applyAsDouble(size))));
            } catch (RuntimeException e) {
                if (!outOfMemory.test(e)) {
                    throw e;
                }
                afterOutOfMemory.run();
                if (trials.isEmpty()) {
                    throw new UserInputException("the device runs out of memory with one prompt per batch ("
                            + e.getMessage().lines().findFirst().orElse("") + "); use a smaller model, a 4-bit"
                            + " quantization or shorter prompts");
                }
                trials.add(new Trial(size, OptionalDouble.empty()));
                break;
            }
        }
        int chosen = trials.stream().filter(t -> !t.outOfMemory())
                .max(Comparator.comparingDouble(Trial::promptsPerSecond)).orElseThrow().batchSize();
        return new Result(chosen, trials);
    }
}
