package dev.crucible.api.model;

import dev.crucible.api.tensor.Tensor;
import java.util.List;
import java.util.Objects;

/**
 * The inputs of one forward step over a left-padded batch, all tensors (so a tracing backend sees them as program
 * inputs, never as host values).
 *
 * @param tokens       {@code [B, T]} I64 token ids
 * @param positions    {@code [B, T]} I64 rotary positions (slot minus the row's padding, 0 on padding slots)
 * @param querySlots   {@code [T]} I64 slot index of each token of this step
 * @param keySlots     {@code [S]} I64 slots the step attends over, {@code 0 .. S-1}; with a KV cache S may be
 *                     shorter than its capacity
 * @param padding      {@code [B]} I64 number of leading padding slots of each row
 * @param cosTable     {@code [P, headDim]} cos table in compute dtype, P above every position
 * @param sinTable     {@code [P, headDim]} sin table in compute dtype
 * @param allPositions logits for every token (training) rather than the last one (generation)
 */
public record Step(Tensor tokens, Tensor positions, Tensor querySlots, Tensor keySlots, Tensor padding,
                   Tensor cosTable, Tensor sinTable, boolean allPositions) {
    public Step {
        Objects.requireNonNull(tokens, "tokens is null");
        Objects.requireNonNull(positions, "positions is null");
        Objects.requireNonNull(querySlots, "querySlots is null");
        Objects.requireNonNull(keySlots, "keySlots is null");
        Objects.requireNonNull(padding, "padding is null");
        Objects.requireNonNull(cosTable, "cosTable is null");
        Objects.requireNonNull(sinTable, "sinTable is null");
    }

    /** The step's tensors in a fixed order: what a step boundary takes as inputs. */
    public List<Tensor> tensors() {
        return List.of(tokens, positions, querySlots, keySlots, padding, cosTable, sinTable);
    }

    /** A step like this one over {@code tensors}, in {@link #tensors()}' order. */
    public Step with(List<Tensor> tensors) {
        return new Step(tensors.get(0), tensors.get(1), tensors.get(2), tensors.get(3), tensors.get(4), tensors.get(5),
                tensors.get(6), allPositions);
    }
}
