package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.TensorInfo;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Every parameter of the decoder, bound by Hugging Face name. With tied embeddings the output head is the
 * embedding tensor itself (one handle, placed once) whether or not the file also stores {@code lm_head.weight}.
 */
public record TransformerWeights(Tensor embedding, List<LayerWeights> layers, Tensor finalNorm, Tensor outputHead) {

    public static final String EMBEDDING = "model.embed_tokens.weight";
    public static final String FINAL_NORM = "model.norm.weight";
    public static final String OUTPUT_HEAD = "lm_head.weight";

    public TransformerWeights {
        Objects.requireNonNull(embedding, "embedding is null");
        Objects.requireNonNull(finalNorm, "finalNorm is null");
        Objects.requireNonNull(outputHead, "outputHead is null");
        layers = List.copyOf(layers);
    }

    /** {@code model.layers.N} */
    public static String layerPrefix(int layer) {
        return "model.layers." + layer;
    }

    /**
     * Loads every parameter {@code config} implies from {@code source}, checking each stored shape against the
     * config first so a mismatched folder fails with the tensor's name rather than deep inside a matmul.
     */
    public static TransformerWeights bind(ModelConfig config, WeightSource source) {
        return new Binder(config, source).bind();
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
            public Tensor load(String name) {
                TensorInfo info = stored.apply(name);
                return new Stored(info.shape(), info.dtype());
            }
        });
    }

    /** Every adaptable projection, layer by layer. */
    public List<LoraLinear> linears() {
        return layers.stream().flatMap(layer -> layer.linears().stream()).toList();
    }

    private record Binder(ModelConfig config, WeightSource source) {

        TransformerWeights bind() {
            long hidden = config.hiddenSize();
            Tensor embedding = load(EMBEDDING, config.vocabSize(), hidden);
            List<LayerWeights> layers = new ArrayList<>();
            for (int layer = 0; layer < config.numLayers(); layer++) {
                layers.add(layer(layer));
            }
            Tensor finalNorm = load(FINAL_NORM, hidden);
            Tensor head;
            if (config.tieWordEmbeddings()) {
                head = embedding;
            } else if (source.contains(OUTPUT_HEAD)) {
                head = load(OUTPUT_HEAD, config.vocabSize(), hidden);
            } else {
                throw new UserInputException("checkpoint has no " + OUTPUT_HEAD + " and config.json says "
                        + "tie_word_embeddings is false; the folder is incomplete");
            }
            return new TransformerWeights(embedding, layers, finalNorm, head);
        }

        private LayerWeights layer(int layer) {
            String prefix = layerPrefix(layer) + ".";
            long hidden = config.hiddenSize();
            long queryWidth = (long) config.numHeads() * config.headDim();
            long keyValueWidth = (long) config.numKvHeads() * config.headDim();
            long intermediate = config.intermediateSize();
            boolean qkvBias = config.qkvBias();
            boolean mlpBias = config.mlpBias();
            return new LayerWeights(
                    load(prefix + "input_layernorm.weight", hidden),
                    linear(prefix + "self_attn.q_proj", queryWidth, hidden, qkvBias),
                    linear(prefix + "self_attn.k_proj", keyValueWidth, hidden, qkvBias),
                    linear(prefix + "self_attn.v_proj", keyValueWidth, hidden, qkvBias),
                    linear(prefix + "self_attn.o_proj", hidden, queryWidth, config.outputBias()),
                    config.qkNorm() ? load(prefix + "self_attn.q_norm.weight", config.headDim()) : null,
                    config.qkNorm() ? load(prefix + "self_attn.k_norm.weight", config.headDim()) : null,
                    load(prefix + "post_attention_layernorm.weight", hidden),
                    linear(prefix + "mlp.gate_proj", intermediate, hidden, mlpBias),
                    linear(prefix + "mlp.up_proj", intermediate, hidden, mlpBias),
                    linear(prefix + "mlp.down_proj", hidden, intermediate, mlpBias));
        }

        private LoraLinear linear(String module, long out, long in, boolean bias) {
            String name = module + ".weight";
            check(name, out, in);
            QuantizedTensor quantized = source.loadQuantized(name);
            Tensor weight = quantized == null ? source.load(name) : null;
            Tensor biasTensor = bias ? load(module + ".bias", out) : null;
            return quantized == null ? new LoraLinear(module, weight, biasTensor)
                    : new LoraLinear(module, quantized, biasTensor);
        }

        private Tensor load(String name, long... expected) {
            check(name, expected);
            return source.load(name);
        }

        private void check(String name, long... expected) {
            if (!source.contains(name)) {
                throw new UserInputException("checkpoint has no tensor " + name + ", which a "
                        + config.architecture().className() + " with this config.json needs");
            }
            long[] stored = source.shape(name);
            if (!Arrays.equals(stored, expected)) {
                throw new UserInputException("checkpoint tensor " + name + " has shape " + Arrays.toString(stored)
                        + " but config.json implies " + Arrays.toString(expected));
            }
        }
    }
}
