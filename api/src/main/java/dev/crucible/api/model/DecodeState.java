package dev.crucible.api.model;

import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.Block;
import dev.crucible.api.model.layout.Layer;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.ShortConvolution;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The per-layer state of one decode batch ({@link LayerState}), preallocated and owned here: zeroed when the batch
 * starts, handed to every step as input, replaced by what the step returns, freed on {@link #close()}.
 */
public final class DecodeState implements AutoCloseable {

    private final TensorOps ops;
    private final List<LayerState> states;

    private DecodeState(TensorOps ops, List<LayerState> states) {
        this.ops = ops;
        this.states = states;
    }

    /**
     * Each layer's state zeroed, for {@code batch} rows of {@code capacity} slots: its stateful block's (attention's
     * keys and values), on the layer's device ({@link TensorOps#forLayer}), kept until {@link #close()}.
     */
    public static DecodeState allocate(TensorOps ops, ModelLayout layout, long batch, long capacity, DType dtype) {
        List<LayerState> states = new ArrayList<>();
        try (var scope = ops.openScope()) {
            for (int index = 0; index < layout.layers().size(); index++) {
                Layer layer = layout.layers().get(index);
                TensorOps at = ops.forLayer(index); // a split model keeps each layer's state with its weights
                states.add(switch (layer.statefulBlock()) {
                    case Attention attention -> new LayerState.KeyValues(
                            at.retain(at.zeros(dtype, batch, attention.kvHeads(), capacity, attention.headDim())),
                            at.retain(at.zeros(dtype, batch, attention.kvHeads(), capacity, attention.headDim())));
                    case ShortConvolution convolution -> new LayerState.ConvolutionWindow(at.retain(
                            at.zeros(dtype, batch, convolution.length() - 1, convolution.width())));
                    case Block other -> throw new IllegalStateException(other + " carries no state");
                });
            }
        }
        return new DecodeState(ops, states);
    }

    /**
     * The state of a left-padded batch whose rows all begin with the tokens {@code prefix} holds the state of (one
     * row, its slots exactly the prefix): each row gets the prefix's keys and values at the slots after its padding,
     * zeros elsewhere, in a cache of {@code capacity} slots. Attention state only (slots are the third dimension).
     *
     * @param padding each row's leading padding slots
     */
    public static DecodeState spread(TensorOps ops, DecodeState prefix, long[] padding, long capacity) {
        List<LayerState> states = new ArrayList<>();
        for (int index = 0; index < prefix.states.size(); index++) {
            TensorOps at = ops.forLayer(index);
            LayerState state = prefix.states.get(index);
            if (!(state instanceof LayerState.KeyValues)) {
                throw new IllegalArgumentException("only attention state spreads over a batch, not " + state);
            }
            List<Tensor> spread = new ArrayList<>();
            try (var scope = at.openScope()) {
                for (Tensor tensor : state.tensors()) {
                    long[] shape = tensor.shape(); // [1, heads, prefix slots, head dim]
                    List<Tensor> rows = new ArrayList<>();
                    for (long pad : padding) {
                        List<Tensor> parts = new ArrayList<>();
                        if (pad > 0) {
                            parts.add(at.zeros(tensor.dtype(), 1, shape[1], pad, shape[3]));
                        }
                        parts.add(tensor);
                        long after = capacity - pad - shape[2];
                        if (after > 0) {
                            parts.add(at.zeros(tensor.dtype(), 1, shape[1], after, shape[3]));
                        }
                        rows.add(at.concat(parts, 2));
                    }
                    spread.add(at.retain(at.concat(rows, 0)));
                }
            }
            states.add(state.with(spread));
        }
        return new DecodeState(ops, states);
    }

    /** Every layer's state, in layer order. */
    public List<LayerState> states() {
        return Collections.unmodifiableList(states);
    }

    /** Every state tensor, layer by layer: a step's state inputs. */
    public List<Tensor> tensors() {
        return flatten(states);
    }

    /** {@code states}' tensors, layer by layer. */
    public static List<Tensor> flatten(List<LayerState> states) {
        List<Tensor> tensors = new ArrayList<>();
        for (LayerState state : states) {
            tensors.addAll(state.tensors());
        }
        return tensors;
    }

    /** States of the kinds of {@code like} over {@code tensors} as {@link #flatten} lays them out. */
    public static List<LayerState> unflatten(List<LayerState> like, List<Tensor> tensors) {
        List<LayerState> states = new ArrayList<>(like.size());
        int next = 0;
        for (LayerState state : like) {
            int count = state.tensors().size();
            states.add(state.with(tensors.subList(next, next + count)));
            next += count;
        }
        if (next != tensors.size()) {
            throw new IllegalArgumentException(tensors.size() + " state tensors for states of " + next);
        }
        return states;
    }

    /**
     * Keeps the rows {@code rows} (indexes into the current rows, in that order) of every layer's state and frees the
     * rest: a decode batch whose rows stopped carries on with the others. Each state tensor's rows are gathered as
     * rows of a {@code [batch, everything else]} table, on the layer's device.
     */
    public void keepRows(int[] rows) {
        long[] ids = Arrays.stream(rows).asLongStream().toArray();
        for (int layer = 0; layer < states.size(); layer++) {
            TensorOps at = ops.forLayer(layer);
            LayerState state = states.get(layer);
            List<Tensor> kept = new ArrayList<>();
            try (var scope = at.openScope()) {
                Tensor index = at.constant(ids, ids.length);
                for (Tensor tensor : state.tensors()) {
                    long[] shape = tensor.shape();
                    long[] keptShape = shape.clone();
                    keptShape[0] = ids.length;
                    Tensor table = at.reshape(tensor, shape[0], -1);
                    kept.add(at.retain(at.reshape(at.embedding(table, index), keptShape)));
                }
            }
            state.tensors().forEach(ops::release);
            states.set(layer, state.with(kept));
        }
    }

    /**
     * Takes the states a step returned. A returned tensor that is not the one it replaces was retained by the step
     * ({@link Transformer#forward(TensorOps, Step, List, ResidualHook)}); the one it replaces is freed here.
     */
    public void adopt(List<LayerState> next) {
        if (next.size() != states.size()) {
            throw new IllegalArgumentException(next.size() + " layer states for " + states.size() + " layers");
        }
        for (int layer = 0; layer < states.size(); layer++) {
            List<Tensor> old = states.get(layer).tensors();
            List<Tensor> replacement = next.get(layer).tensors();
            for (int i = 0; i < old.size(); i++) {
                if (replacement.get(i) != old.get(i)) {
                    ops.release(old.get(i));
                }
            }
            states.set(layer, next.get(layer));
        }
    }

    @Override
    public void close() {
        for (LayerState state : states) {
            state.tensors().forEach(ops::release);
        }
        states.clear();
    }
}
