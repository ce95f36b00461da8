package dev.crucible.api.model;

import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.Block;
import dev.crucible.api.model.layout.GatedMlp;
import dev.crucible.api.model.layout.MixtureOfExperts;
import dev.crucible.api.model.layout.ShortConvolution;
import dev.crucible.api.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A {@link Block} of the layout with its tensors bound, and the norms around it (its
 * {@link dev.crucible.api.model.layout.Residual}'s). One record per block kind, so the {@link Transformer} composes
 * them by a switch the compiler checks for completeness.
 */
public sealed interface BlockWeights {

    /** The RMSNorm applied to the residual stream before the block, or null. */
    Tensor preNorm();

    /** The RMSNorm applied to the block's output before it is added, or null. */
    Tensor postNorm();

    /** The block's projections in the order it applies them. */
    List<LoraLinear> linears();

    /**
     * Attention's weights: {@code query}, {@code key} and {@code value}, or {@code qkv} when the layout fuses them
     * (the others null); {@code queryNorm}/{@code keyNorm} null unless the layout normalizes queries and keys.
     */
    record AttentionWeights(Attention layout, Tensor preNorm, Tensor postNorm, LoraLinear query, LoraLinear key,
                            LoraLinear value, LoraLinear qkv, LoraLinear output, Tensor queryNorm, Tensor keyNorm)
            implements BlockWeights {
        public AttentionWeights {
            Objects.requireNonNull(layout, "layout is null");
            Objects.requireNonNull(output, "output is null");
            if ((layout.qkv() == null) != (qkv == null) || (qkv == null && (query == null || key == null
                    || value == null))) {
                throw new IllegalArgumentException("attention weights do not match the layout's projections");
            }
        }

        @Override
        public List<LoraLinear> linears() {
            return qkv != null ? List.of(qkv, output) : List.of(query, key, value, output);
        }
    }

    /** The gated MLP's weights: {@code gate} and {@code up}, or {@code gateUp} when the layout fuses them. */
    record MlpWeights(GatedMlp layout, Tensor preNorm, Tensor postNorm, LoraLinear gate, LoraLinear up,
                      LoraLinear gateUp, LoraLinear down) implements BlockWeights {
        public MlpWeights {
            Objects.requireNonNull(layout, "layout is null");
            Objects.requireNonNull(down, "down is null");
            if ((layout.gateUp() == null) != (gateUp == null) || (gateUp == null && (gate == null || up == null))) {
                throw new IllegalArgumentException("MLP weights do not match the layout's projections");
            }
        }

        @Override
        public List<LoraLinear> linears() {
            return gateUp != null ? List.of(gateUp, down) : List.of(gate, up, down);
        }
    }

    /** A mixture of experts' weights: its router and each expert's projections, in the layout's order. */
    record MixtureWeights(MixtureOfExperts layout, Tensor preNorm, Tensor postNorm, LoraLinear router,
                          List<Expert> experts) implements BlockWeights {
        public MixtureWeights {
            Objects.requireNonNull(layout, "layout is null");
            Objects.requireNonNull(router, "router is null");
            experts = List.copyOf(experts);
            if (experts.size() != layout.experts().size()) {
                throw new IllegalArgumentException(experts.size() + " bound experts for " + layout.experts().size());
            }
        }

        @Override
        public List<LoraLinear> linears() {
            List<LoraLinear> linears = new ArrayList<>(List.of(router));
            experts.forEach(expert -> linears.addAll(List.of(expert.gate(), expert.up(), expert.down())));
            return linears;
        }

        /** One expert: a gated MLP without a norm of its own (the mixture's is before the router). */
        public record Expert(LoraLinear gate, LoraLinear up, LoraLinear down) {
            public Expert {
                Objects.requireNonNull(gate, "gate is null");
                Objects.requireNonNull(up, "up is null");
                Objects.requireNonNull(down, "down is null");
            }
        }
    }

    /** A short convolution's weights: in_proj, the depthwise kernel {@code [width, 1, length]}, out_proj. */
    record ConvolutionWeights(ShortConvolution layout, Tensor preNorm, Tensor postNorm, LoraLinear input,
                              Tensor kernel, LoraLinear output) implements BlockWeights {
        public ConvolutionWeights {
            Objects.requireNonNull(layout, "layout is null");
            Objects.requireNonNull(input, "input is null");
            Objects.requireNonNull(kernel, "kernel is null");
            Objects.requireNonNull(output, "output is null");
        }

        @Override
        public List<LoraLinear> linears() {
            return List.of(input, output);
        }
    }
}
