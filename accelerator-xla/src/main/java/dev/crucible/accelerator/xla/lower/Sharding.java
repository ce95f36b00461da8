package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.pjrt.CompileOptions.Partitioner;
import java.util.Objects;

/**
 * How a model's tensors lie over the devices one program runs on. One device keeps everything whole and stays out
 * of SPMD (the seed's lesson: single-core runs are plain). {@code fsdp} splits every weight matrix along its first
 * dimension over all devices (the partitioner gathers what each layer needs) and a per-layer state tensor (the KV
 * cache) along the batch, else its heads, so that each device holds 1/N of both; vectors and the step's inputs and
 * outputs, which are small, stay whole.
 *
 * @param strategy    {@code single} or {@code fsdp}
 * @param partitions  devices one program runs on
 * @param partitioner whose annotations the programs carry (Shardy, with GSPMD for plugins that reject it)
 */
public record Sharding(String strategy, int partitions, Partitioner partitioner) {

    public static final Sharding SINGLE = new Sharding("single", 1, Partitioner.NONE);

    public Sharding {
        Objects.requireNonNull(strategy, "strategy is null");
        Objects.requireNonNull(partitioner, "partitioner is null");
        if ((partitions == 1) != (partitioner == Partitioner.NONE)) {
            throw new IllegalArgumentException(partitions + " partitions with partitioner " + partitioner);
        }
    }

    /** FSDP over {@code partitions} devices (one device is {@link #SINGLE}). */
    public static Sharding fsdp(int partitions, Partitioner partitioner) {
        if (partitions == 1) {
            return SINGLE;
        }
        return new Sharding("fsdp", partitions, partitioner);
    }

    public boolean spmd() {
        return partitions > 1;
    }

    /** The same split written for another partitioner (the fallback when a plugin rejects Shardy). */
    public Sharding withPartitioner(Partitioner other) {
        return spmd() ? new Sharding(strategy, partitions, other) : this;
    }

    /** Where a placed tensor (weight, adapter factor, rotary table) lives. */
    public Layout weight(long[] shape) {
        return shape.length >= 2 ? Layout.splitIfDivisible(shape, 0, partitions) : Layout.REPLICATED;
    }

    /** Where per-layer state ({@code [batch, heads, slots, width]}) lives: split by batch, else by heads. */
    public Layout state(long[] shape) {
        Layout byBatch = Layout.splitIfDivisible(shape, 0, partitions);
        return byBatch.replicated() ? Layout.splitIfDivisible(shape, 1, partitions) : byBatch;
    }

    StableHloEmitter.Partitioning partitioning() {
        return new StableHloEmitter.Partitioning(partitions, partitioner);
    }
}
