package dev.crucible.accelerator.xla.lower;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelCost;
import java.util.OptionalLong;

/**
 * How many prompts one device batch takes, from the device's memory and what the model needs of it: the weights (a
 * share of them under FSDP), and per prompt its keys and values for every slot of the decode window plus the
 * prefill's float32 temporaries (one layer's activations, attention scores and probabilities, the logits). The
 * estimate errs high on purpose, and a batch that still runs out of memory is halved and run again; batches stay at
 * or below {@link #LARGEST} prompts, past which a device is busy anyway and a compile only takes longer.
 */
public final class BatchPlanner {
    /** The most prompts in one batch. */
    public static final int LARGEST = 64;
    /** Prompts per batch where the device does not say how much memory it has. */
    public static final int WITHOUT_MEMORY_FIGURES = 8;
    /** What a run may plan to use of a device's memory; the rest is the runtime's and the compiler's. */
    private static final double USABLE = 0.9;
    private static final double GIB = 1L << 30;

    private BatchPlanner() {
    }

    /**
     * Prompts per batch for {@code prompts} prompts of up to {@code promptLength} tokens, each generating up to
     * {@code newTokens} (0 for a forward pass).
     *
     * @param deviceBytes what one device holds, where known
     */
    public static int promptsPerBatch(ModelConfig config, DType dtype, int partitions, OptionalLong deviceBytes,
                                      int promptLength, int newTokens, int prompts) {
        int wanted = Math.max(1, Math.min(prompts, LARGEST));
        if (deviceBytes.isEmpty()) {
            return Math.min(wanted, WITHOUT_MEMORY_FIGURES);
        }
        long weights = weightBytesPerDevice(config, dtype, partitions);
        double budget = USABLE * deviceBytes.getAsLong() - weights;
        if (budget <= 0) {
            throw new UserInputException(String.format(java.util.Locale.ROOT, "the model's weights take %.2f GiB of "
                    + "each device's %.2f GiB (%d device%s): split it over more devices (--xla-devices)",
                    weights / GIB, deviceBytes.getAsLong() / GIB, partitions, partitions == 1 ? "" : "s"));
        }
        long perPrompt = bytesPerPrompt(config, dtype, promptLength, newTokens);
        long fits = (long) (budget / perPrompt);
        return (int) Math.max(1, Math.min(wanted, fits));
    }

    /** The weights one device holds: all of them, or its share of the split matrices under FSDP. */
    public static long weightBytesPerDevice(ModelConfig config, DType dtype, int partitions) {
        ModelCost cost = ModelCost.of(config, dtype);
        long matrices = (cost.linearParams() + cost.headParams() + cost.untiedEmbedding()) * dtype.byteSize();
        return matrices / partitions + cost.normParams() * dtype.byteSize();
    }

    /** One prompt's keys and values over the whole window and its prefill temporaries (float32, one layer's worth). */
    static long bytesPerPrompt(ModelConfig config, DType dtype, int promptLength, int newTokens) {
        ModelCost cost = ModelCost.of(config, dtype);
        long window = promptLength + Math.max(0, newTokens - 1L);
        long cache = cost.cacheRowBytes() * window;
        long activations = (long) promptLength * (6L * config.hiddenSize() + 3L * config.intermediateSize()) * 4;
        long attention = 2L * config.numHeads() * promptLength * window * 4;
        long logits = 2L * config.vocabSize() * 4;
        return cache + activations + attention + logits;
    }
}
