package dev.crucible.api.model.layout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A model as its family lays it out: every parameter with its role and layer, and the blocks the one
 * {@link dev.crucible.api.model.Transformer} composes. Binding the checkpoint, the cost of a step, init-model's
 * tensors, LoRA targets, abliteration's edited components and exports all derive from this, so a family is
 * written in one place (its {@link dev.crucible.api.model.Architecture} entry) plus its blocks.
 *
 * @param family     the transformers class it lays out, e.g. {@code LlamaForCausalLM} (for messages)
 * @param embedding  the token embedding {@code [vocab, hidden]}
 * @param finalNorm  the norm before the output head
 * @param outputHead the output head {@code [vocab, hidden]} as the checkpoint names it
 * @param tiedHead   the head is the embedding itself (a checkpoint may store it anyway; it is never read)
 * @param embeddingScale what the embedded tokens are multiplied by (Granite's {@code embedding_multiplier}), 1 for most
 * @param logitScale what the logits are multiplied by (Granite's {@code 1 / logits_scaling}), 1 for most
 * @param unitOffsetNorms every RMSNorm multiplies by {@code 1 + weight} (Gemma stores the offset from one)
 * @param logitSoftcap 0, or the cap of the logits ({@code softcap · tanh(logits / softcap)}, Gemma 2)
 */
public record ModelLayout(String family, Parameter embedding, List<Layer> layers, Norm finalNorm, Parameter outputHead,
                          boolean tiedHead, double embeddingScale, double logitScale, boolean unitOffsetNorms,
                          double logitSoftcap) {

    public ModelLayout {
        Objects.requireNonNull(family, "family is null");
        Objects.requireNonNull(embedding, "embedding is null");
        Objects.requireNonNull(finalNorm, "finalNorm is null");
        Objects.requireNonNull(outputHead, "outputHead is null");
        layers = List.copyOf(layers);
    }

    /** Every tensor the model reads, in the order it is bound (a tied head is not among them). */
    public List<Parameter> parameters() {
        List<Parameter> parameters = new ArrayList<>();
        parameters.add(embedding);
        for (Layer layer : layers) {
            for (Residual residual : layer.blocks()) {
                parameters.addAll(residual.parameters());
            }
        }
        parameters.add(finalNorm.parameter());
        if (!tiedHead) {
            parameters.add(outputHead);
        }
        return parameters;
    }

    /** Every projection, layer by layer, in the order the model applies them: what adapters attach to. */
    public List<Linear> linears() {
        List<Linear> linears = new ArrayList<>();
        for (Layer layer : layers) {
            for (Residual residual : layer.blocks()) {
                linears.addAll(residual.block().linears());
            }
        }
        return linears;
    }

    /** The projection named {@code module} as PEFT targets it. */
    public Optional<Linear> linear(String module) {
        return linears().stream().filter(linear -> linear.module().equals(module)).findFirst();
    }

    /** Every projection whose output is added to the residual stream, layer by layer: what abliteration edits. */
    public List<Linear> residualWriters() {
        return linears().stream().filter(linear -> linear.role().writesResidual()).toList();
    }

    /** Every block of a kind, layer by layer. */
    public <B extends Block> List<B> blocks(Class<B> kind) {
        List<B> blocks = new ArrayList<>();
        for (Layer layer : layers) {
            for (Residual residual : layer.blocks()) {
                if (kind.isInstance(residual.block())) {
                    blocks.add(kind.cast(residual.block()));
                }
            }
        }
        return blocks;
    }

    /** Every distinct weight the model holds (a tied head once). */
    public long parameterCount() {
        return parameters().stream().mapToLong(Parameter::elementCount).sum();
    }
}
