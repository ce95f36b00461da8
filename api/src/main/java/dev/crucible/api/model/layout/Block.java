package dev.crucible.api.model.layout;

import java.util.List;

/**
 * One of the blocks the one {@link dev.crucible.api.model.Transformer} composes, as a family lays it out. The set is
 * sealed: a family is its parameters and a choice of these blocks, and a new kind of block (a mixture of experts, a
 * short convolution) is a new permitted record with its computation beside the others, never a copy of the model.
 */
public sealed interface Block permits Attention, GatedMlp, MixtureOfExperts, ShortConvolution {

    /** Its projections, in the order the model applies them. */
    List<Linear> linears();

    /** Every tensor it reads, in the order they are bound: its projections' unless it has others. */
    default List<Parameter> parameters() {
        return linears().stream().flatMap(linear -> linear.parameters().stream()).toList();
    }

    /** Whether it carries state from one step to the next (attention's keys and values). */
    boolean stateful();
}
