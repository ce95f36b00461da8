package dev.crucible.api.model;

import java.util.List;

/** {@link Generation} per prompt, in request order. */
public record DecodeResult(List<Generation> generations) {
    public DecodeResult {
        generations = List.copyOf(generations);
    }
}
