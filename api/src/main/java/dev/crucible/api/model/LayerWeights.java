package dev.crucible.api.model;

import dev.crucible.api.model.layout.Layer;
import java.util.List;
import java.util.Objects;

/** One decoder layer's parameters: its layout and each of its blocks bound, in order. */
public record LayerWeights(Layer layout, List<BlockWeights> blocks) {

    public LayerWeights {
        Objects.requireNonNull(layout, "layout is null");
        blocks = List.copyOf(blocks);
        if (blocks.size() != layout.blocks().size()) {
            throw new IllegalArgumentException("layer " + layout.index() + ": " + blocks.size() + " bound blocks for "
                    + layout.blocks().size());
        }
    }

    /** Its adaptable projections in the order the model applies them. */
    public List<LoraLinear> linears() {
        return blocks.stream().flatMap(block -> block.linears().stream()).toList();
    }
}
