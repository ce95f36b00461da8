package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.TensorInfo;
import dev.crucible.api.model.BlockWeights.AttentionWeights;
import dev.crucible.api.model.BlockWeights.ConvolutionWeights;
import dev.crucible.api.model.BlockWeights.MixtureWeights;
import dev.crucible.api.model.BlockWeights.MlpWeights;
import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.GatedMlp;
import dev.crucible.api.model.layout.Layer;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.model.layout.MixtureOfExperts;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Norm;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.Residual;
import dev.crucible.api.model.layout.ShortConvolution;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Every parameter of the decoder, bound as its {@link ModelLayout} names them. With tied embeddings the output head
 * is the embedding tensor itself (one handle, placed once) whether or not the file also stores the head.
 *
 * @param outputHead    the dense head (with tied embeddings, the embedding); null when the head is only quantized
 * @param quantizedHead the head as the quantization config keeps it when it quantizes the head ({@code lm_head}),
 *                      else null. With tied embeddings it is a quantized copy of the embedding table: the lookups
 *                      read the dense table, the logits the copy (half or a quarter of the bytes every decode step
 *                      reads for the head).
 */
public record TransformerWeights(ModelLayout layout, Tensor embedding, List<LayerWeights> layers, Tensor finalNorm,
                                 Tensor outputHead, QuantizedTensor quantizedHead) {

    public TransformerWeights {
        Objects.requireNonNull(layout, "layout is null");
        Objects.requireNonNull(embedding, "embedding is null");
        Objects.requireNonNull(finalNorm, "finalNorm is null");
        if (outputHead == null && quantizedHead == null) {
            throw new NullPointerException("the output head is null");
        }
        layers = List.copyOf(layers);
    }

    /**
     * Loads every parameter {@code config}'s layout implies from {@code source}, checking each stored shape against
     * the config first so a mismatched folder fails with the tensor's name rather than deep inside a matmul.
     */
    public static TransformerWeights bind(ModelConfig config, WeightSource source) {
        return new Binder(config.layout(), source).bind();
    }

    /**
     * Checks, without loading anything, that {@code checkpoint} holds every tensor {@code config} implies with the
     * shapes it implies: the same binding as {@link #bind}, over stand-ins that carry only the stored shape. A command
     * that reads several models checks them all this way before it spends time on any.
     */
    public static void check(ModelConfig config, Checkpoint checkpoint) {
        bindStandIns(config, name -> checkpoint.contains(name) ? checkpoint.info(name) : null);
    }

    /**
     * The weight names ({@code M.weight}) of every adaptable projection of {@code config}, layer by layer, checked
     * against {@code stored} (each tensor's header entry by name, null when absent) as {@link #check} does.
     */
    public static List<String> projectionWeights(ModelConfig config, java.util.function.Function<String, TensorInfo> stored) {
        return bindStandIns(config, stored).linears().stream().map(linear -> linear.module() + ".weight").toList();
    }

    private static TransformerWeights bindStandIns(ModelConfig config,
                                                   java.util.function.Function<String, TensorInfo> stored) {
        record Stored(long[] stored, DType dtype) implements Tensor {
            @Override
            public long[] shape() {
                return stored.clone();
            }
        }
        return bind(config, new WeightSource() {
            @Override
            public boolean contains(String name) {
                return stored.apply(name) != null;
            }

            @Override
            public long[] shape(String name) {
                return stored.apply(name).shape();
            }

            @Override
            public Tensor load(Parameter parameter) {
                TensorInfo info = stored.apply(parameter.name());
                return new Stored(info.shape(), info.dtype());
            }
        });
    }

    /** Every adaptable projection, layer by layer. */
    public List<LoraLinear> linears() {
        return layers.stream().flatMap(layer -> layer.linears().stream()).toList();
    }

    /** The projection named {@code module} as PEFT targets it, e.g. {@code model.layers.0.self_attn.v_proj}. */
    public LoraLinear linear(String module) {
        return linears().stream().filter(linear -> linear.module().equals(module)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no adaptable projection named '" + module + "'"));
    }

    /** Binds in the layout's order: each block's pre-norm, its tensors, its post-norm; the embedding first, the head last. */
    private record Binder(ModelLayout layout, WeightSource source) {

        TransformerWeights bind() {
            Tensor embedding = load(layout.embedding());
            List<LayerWeights> layers = new ArrayList<>();
            for (Layer layer : layout.layers()) {
                List<BlockWeights> blocks = new ArrayList<>();
                for (Residual residual : layer.blocks()) {
                    blocks.add(block(residual));
                }
                layers.add(new LayerWeights(layer, blocks));
            }
            Tensor finalNorm = load(layout.finalNorm());
            Tensor head;
            QuantizedTensor quantizedHead;
            Parameter headParameter = layout.outputHead();
            String headName = headParameter.name();
            if (layout.tiedHead()) {
                head = embedding;
                quantizedHead = source.loadQuantized(headParameter, layout.embedding().name());
            } else if (source.contains(headName)) {
                check(headParameter);
                quantizedHead = source.loadQuantized(headParameter);
                head = quantizedHead == null ? source.load(headParameter) : null;
            } else {
                throw new UserInputException("checkpoint has no " + headName + " and config.json says "
                        + "tie_word_embeddings is false; the folder is incomplete");
            }
            return new TransformerWeights(layout, embedding, layers, finalNorm, head, quantizedHead);
        }

        private BlockWeights block(Residual residual) {
            Tensor preNorm = residual.preNorm() == null ? null : load(residual.preNorm());
            BlockWeights block = switch (residual.block()) {
                case Attention attention -> {
                    LoraLinear query = optional(attention.query());
                    LoraLinear key = optional(attention.key());
                    LoraLinear value = optional(attention.value());
                    LoraLinear qkv = optional(attention.qkv());
                    LoraLinear output = linear(attention.output());
                    Tensor queryNorm = attention.queryNorm() == null ? null : load(attention.queryNorm());
                    Tensor keyNorm = attention.keyNorm() == null ? null : load(attention.keyNorm());
                    Tensor postNorm = postNorm(residual);
                    yield new AttentionWeights(attention, preNorm, postNorm, query, key, value, qkv, output,
                            queryNorm, keyNorm);
                }
                case GatedMlp mlp -> {
                    LoraLinear gate = optional(mlp.gate());
                    LoraLinear up = optional(mlp.up());
                    LoraLinear gateUp = optional(mlp.gateUp());
                    LoraLinear down = linear(mlp.down());
                    yield new MlpWeights(mlp, preNorm, postNorm(residual), gate, up, gateUp, down);
                }
                case MixtureOfExperts mixture -> new MixtureWeights(mixture, preNorm, postNorm(residual),
                        linear(mixture.router()), mixture.experts().stream().map(expert -> new MixtureWeights.Expert(
                                linear(expert.gate()), linear(expert.up()), linear(expert.down()))).toList());
                case ShortConvolution convolution -> new ConvolutionWeights(convolution, preNorm, postNorm(residual),
                        linear(convolution.input()), load(convolution.kernel()), linear(convolution.output()));
            };
            return block;
        }

        /** A projection the layout may leave out (q/k/v when fused, or the fused one when not). */
        private LoraLinear optional(Linear linear) {
            return linear == null ? null : linear(linear);
        }

        /** Bound after the block's own tensors, the layout's order ({@link Residual#parameters()}). */
        private Tensor postNorm(Residual residual) {
            return residual.postNorm() == null ? null : load(residual.postNorm());
        }

        private LoraLinear linear(Linear linear) {
            Parameter weightParameter = linear.weight();
            check(weightParameter);
            QuantizedTensor quantized = source.loadQuantized(weightParameter);
            Tensor weight = quantized == null ? source.load(weightParameter) : null;
            Tensor bias = linear.biasParameter().map(this::load).orElse(null);
            return quantized == null ? new LoraLinear(linear.module(), weight, bias)
                    : new LoraLinear(linear.module(), quantized, bias);
        }

        private Tensor load(Norm norm) {
            return load(norm.parameter());
        }

        private Tensor load(Parameter parameter) {
            check(parameter);
            return source.load(parameter);
        }

        private void check(Parameter parameter) {
            String name = parameter.name();
            if (!source.contains(name)) {
                throw new UserInputException("checkpoint has no tensor " + name + ", which a " + layout.family()
                        + " with this config.json needs");
            }
            long[] stored = source.shape(name);
            if (!Arrays.equals(stored, parameter.shape())) {
                throw new UserInputException("checkpoint tensor " + name + " has shape " + Arrays.toString(stored)
                        + " but config.json implies " + Arrays.toString(parameter.shape()));
            }
        }
    }
}
