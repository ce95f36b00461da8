package dev.crucible.api.model;

import dev.crucible.api.tensor.Tensor;
import java.util.List;
import java.util.Objects;

/**
 * What one decoder layer carries from a step to the next, for a batch: the keys and values of attention (and, for
 * families with convolution layers, the window of recent inputs, which takes its place here). A step takes each
 * layer's state as input and returns its new state, so the state is a step's input and output like any tensor and
 * a compiled program can take and return it (donated, in place). An eager backend writes in place and returns the
 * same tensors.
 */
public sealed interface LayerState {

    /** The tensors of this state, in a fixed order (the inputs and outputs of a step). */
    List<Tensor> tensors();

    /** A state of the same kind over {@code tensors}, in {@link #tensors()}' order. */
    LayerState with(List<Tensor> tensors);

    /**
     * Attention's keys and values, {@code [batch, kvHeads, capacity, headDim]} each. Slot {@code s} of a row holds
     * the token at absolute index {@code s} of that row's left-padded sequence; a step writes its slots with
     * {@link dev.crucible.api.tensor.TensorOps#writeSlots}, so the cache never grows or moves.
     */
    record KeyValues(Tensor keys, Tensor values) implements LayerState {
        public KeyValues {
            Objects.requireNonNull(keys, "keys is null");
            Objects.requireNonNull(values, "values is null");
        }

        /** Slots per row. */
        public long capacity() {
            return keys.size(2);
        }

        @Override
        public List<Tensor> tensors() {
            return List.of(keys, values);
        }

        @Override
        public KeyValues with(List<Tensor> tensors) {
            return new KeyValues(tensors.get(0), tensors.get(1));
        }
    }

    /**
     * A short convolution's most recent inputs, {@code [batch, length - 1, width]}: the {@code B·x} rows of the
     * positions before this step's, oldest first (zeros before a row's first token). A step returns the window that
     * ends at its last position.
     */
    record ConvolutionWindow(Tensor recent) implements LayerState {
        public ConvolutionWindow {
            Objects.requireNonNull(recent, "recent is null");
        }

        @Override
        public List<Tensor> tensors() {
            return List.of(recent);
        }

        @Override
        public ConvolutionWindow with(List<Tensor> tensors) {
            return new ConvolutionWindow(tensors.getFirst());
        }
    }
}
