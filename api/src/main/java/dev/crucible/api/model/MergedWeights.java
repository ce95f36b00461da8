package dev.crucible.api.model;

import dev.crucible.api.tensor.HostTensor;
import java.lang.foreign.Arena;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Base weights with their adapters merged in ({@code W + scale·B·A}), on the host, under the base tensors' names,
 * shapes and dtypes: what an exporter writes in place of the originals. Only weights that had an adapter are here.
 * The tensors live in an arena this object owns; {@link #close()} frees them.
 */
public final class MergedWeights implements AutoCloseable {

    private final Map<String, HostTensor> tensors;
    private final Arena arena;

    public MergedWeights(Map<String, HostTensor> tensors, Arena arena) {
        this.tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
        this.arena = Objects.requireNonNull(arena, "arena is null");
    }

    /** Merged tensors by base weight name (e.g. {@code model.layers.3.mlp.down_proj.weight}), in layer order. */
    public Map<String, HostTensor> tensors() {
        return tensors;
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
