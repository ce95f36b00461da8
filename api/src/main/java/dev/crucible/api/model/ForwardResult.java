package dev.crucible.api.model;

import java.util.List;

/** {@link Activations} per prompt, in request order. */
public record ForwardResult(List<Activations> prompts) {
    public ForwardResult {
        prompts = List.copyOf(prompts);
    }
}
