package dev.crucible.api.model.layout;

import java.util.List;

/** One decoder layer: its blocks in order, exactly one of them stateful (the one whose state a step carries). */
public record Layer(int index, List<Residual> blocks) {

    public Layer {
        blocks = List.copyOf(blocks);
        long stateful = blocks.stream().filter(residual -> residual.block().stateful()).count();
        if (stateful != 1) {
            throw new IllegalArgumentException("layer " + index + " has " + stateful + " blocks with state; a layer has one");
        }
    }

    /** The block whose state the layer carries from step to step. */
    public Block statefulBlock() {
        return blocks.stream().map(Residual::block).filter(Block::stateful).findFirst().orElseThrow();
    }
}
