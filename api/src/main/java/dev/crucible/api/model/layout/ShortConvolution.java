package dev.crucible.api.model.layout;

import java.util.List;
import java.util.Objects;

/**
 * LFM2's short gated causal convolution: {@code in_proj} splits into B, C and x; {@code B·x} goes through a
 * depthwise convolution over the last {@code length} positions (this one and the {@code length - 1} before it, zeros
 * before the first token); {@code C} gates the result and {@code out_proj} writes it into the residual stream. The
 * {@code length - 1} most recent {@code B·x} rows are the state a decode step carries, as attention carries keys.
 *
 * @param kernel the depthwise kernel {@code [width, 1, length]} ({@code conv.conv.weight})
 */
public record ShortConvolution(Linear input, Parameter kernel, Linear output, int width, int length)
        implements Block {

    public ShortConvolution {
        Objects.requireNonNull(input, "input is null");
        Objects.requireNonNull(kernel, "kernel is null");
        Objects.requireNonNull(output, "output is null");
        if (length < 1) {
            throw new IllegalArgumentException("convolution length " + length + " is not positive");
        }
    }

    @Override
    public List<Linear> linears() {
        return List.of(input, output);
    }

    /** in_proj, the kernel, out_proj. */
    @Override
    public List<Parameter> parameters() {
        return List.of(input.weight(), kernel, output.weight());
    }

    @Override
    public boolean stateful() {
        return true;
    }
}
