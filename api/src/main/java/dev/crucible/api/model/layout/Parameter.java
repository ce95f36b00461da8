package dev.crucible.api.model.layout;

import java.util.Arrays;
import java.util.Objects;

/**
 * One tensor of a checkpoint as a family stores it.
 *
 * @param name  the checkpoint name, e.g. {@code model.layers.3.mlp.down_proj.weight}
 * @param layer the decoder layer it belongs to, -1 outside the layers (embedding, final norm, head)
 * @param shape the shape the config implies
 * @param bias  a projection's bias rather than its weight
 */
public record Parameter(String name, Role role, int layer, long[] shape, boolean bias) {

    public Parameter {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(role, "role is null");
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public long elementCount() {
        return Arrays.stream(shape).reduce(1, Math::multiplyExact);
    }

    /** A projection's weight matrix (what LoRA adapts and QLoRA quantizes). */
    public boolean isProjectionWeight() {
        return role.isProjection() && !bias;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Parameter that && name.equals(that.name) && role == that.role && layer == that.layer
                && Arrays.equals(shape, that.shape) && bias == that.bias;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, role, layer, Arrays.hashCode(shape), bias);
    }

    @Override
    public String toString() {
        return name + Arrays.toString(shape);
    }
}
