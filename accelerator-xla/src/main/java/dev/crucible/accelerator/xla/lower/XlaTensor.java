package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.exec.DeviceArray;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import java.util.Arrays;
import java.util.List;

/**
 * A tensor of {@link XlaOps}: a node of the graph being traced ({@link Op} over input tensors) until a host read or
 * a step end materializes it, after which it is a leaf holding device arrays. Constants made on the host stay host
 * values until a program takes them as an argument (so a slice of them is folded on the host instead of baking its
 * bounds into the program). Ownership and reference counts are kept by {@link XlaOps}.
 */
public final class XlaTensor implements Tensor {
    private final long[] shape;
    private final DType dtype;
    /** Creation order: programs list their arguments and results in it, so the same trace gives the same text. */
    final long serial;

    /** The argument name a program's manifest shows (a checkpoint tensor name), or null. */
    String name;

    Op op;
    XlaTensor[] inputs;
    HostTensor host;
    Placed device;

    /** Retained by an owner; the scope that made it no longer frees it. */
    int retains;
    /** Made in a scope that is still open and not retained. */
    boolean scopeOwned;
    /** Lazy nodes that read this one. */
    int referrers;
    /** Whether any node ever read this one (a value nobody consumed is one a caller may still read). */
    boolean consumed;
    /** Why it is gone (freed, donated), or null while it can be used. */
    String gone;

    /** Device arrays, one per partition, and how the global value lies over them. */
    record Placed(List<DeviceArray> shards, Layout layout) {
        Placed {
            shards = List.copyOf(shards);
        }

        void close() {
            shards.forEach(DeviceArray::close);
        }
    }

    XlaTensor(long serial, DType dtype, long[] shape) {
        this.serial = serial;
        this.dtype = dtype;
        this.shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    long[] shapeView() {
        return shape;
    }

    @Override
    public DType dtype() {
        return dtype;
    }

    boolean lazy() {
        return op != null;
    }

    boolean alive() {
        return retains > 0 || scopeOwned;
    }

    long elements() {
        long count = 1;
        for (long extent : shape) {
            count *= extent;
        }
        return count;
    }

    void checkUsable() {
        if (gone != null) {
            throw new IllegalStateException("tensor " + this + " was " + gone);
        }
    }

    @Override
    public String toString() {
        return (name != null ? name + ":" : "") + dtype + Arrays.toString(shape);
    }
}
