package dev.crucible.accelerator.xla.lower;

import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.DType;

/**
 * What a traced node computes from its inputs: one record per {@link dev.crucible.api.tensor.TensorOps} operation
 * (ops the interface composes by default, such as rotary or dequantize, arrive as their parts). Attributes that
 * change the program (a slice's bounds, a norm's epsilon) live here; values never do.
 */
sealed interface Op {

    /** A tensor of zeros, written into the program as a constant. */
    record Zeros() implements Op { }

    record Convert(DType to) implements Op { }

    /** Same elements, the node's shape. */
    record Reshape() implements Op { }

    record Transpose(int dim0, int dim1) implements Op { }

    record Slice(int dim, long start, long end) implements Op { }

    record Concat(int dim) implements Op { }

    /** Element-wise with NumPy broadcasting. */
    record Binary(Kind kind) implements Op {
        enum Kind { ADD, MULTIPLY }
    }

    record Scale(double factor) implements Op { }

    record Negate() implements Op { }

    record Silu() implements Op { }

    record Tanh() implements Op { }

    /**
     * {@code x · weightᵀ (· scales) (+ bias)}: inputs x, weight, when {@code scaled} a float32 scale per output
     * channel (applied to the float32 product before the bias and the rounding), and when {@code bias} the bias.
     */
    record Linear(boolean bias, boolean scaled) implements Op {
        /** A plain product, without per-channel scales. */
        Linear(boolean bias) {
            this(bias, false);
        }
    }

    /** {@code a [m, k] · b [k, n]}. */
    record MatMul() implements Op { }

    /** Rows of a table: inputs table, ids. */
    record Embedding() implements Op { }

    record RmsNorm(double eps) implements Op { }

    record Softmax(int dim, boolean log) implements Op { }

    record Argmax(int dim) implements Op { }

    record Compare(Comparison comparison) implements Op { }

    record Logical(boolean and) implements Op { }

    /** Inputs q, k, v, allowed. */
    /** {@code softcap} 0: scores as they are; else {@code softcap · tanh(scores / softcap)} before the mask. */
    record Attention(double scale, double softcap) implements Op { }

    /**
     * Inputs target, index, source. {@code contiguous}: the index was a host constant counting up by one, so the
     * write is one dynamic slice at its first entry (the property, not the values, is part of the program).
     */
    record WriteSlots(int dim, boolean contiguous) implements Op { }
}
