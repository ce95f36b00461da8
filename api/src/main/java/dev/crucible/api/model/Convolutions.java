package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import java.util.Set;

/**
 * Which layers of a hybrid model are short gated convolutions instead of attention (LFM2's {@code layer_types}),
 * and the convolution's length ({@code conv_L_cache}); {@link #NONE} where every layer attends.
 */
public record Convolutions(int length, Set<Integer> layers) {

    public static final Convolutions NONE = new Convolutions(0, Set.of());

    public Convolutions {
        layers = Set.copyOf(layers);
        if (!layers.isEmpty() && length < 1) {
            throw new UserInputException("config.json: conv_L_cache must be positive, got " + length);
        }
    }

    public boolean convolution(int layer) {
        return layers.contains(layer);
    }
}
