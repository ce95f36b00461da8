package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.Block;
import dev.crucible.api.model.layout.GatedMlp;
import dev.crucible.api.model.layout.Layer;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.model.layout.MixtureOfExperts;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Norm;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.Residual;
import dev.crucible.api.model.layout.Role;
import dev.crucible.api.model.layout.ShortConvolution;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;
import java.util.stream.Collectors;

/**
 * The decoder families the one model definition covers. Each is one place: what its {@code config.json} means
 * beyond the keys every family shares (the facts transformers hard-codes in its modeling code), and its
 * {@link ModelLayout} — its parameters, their roles and the blocks it composes. Everything else (binding, cost,
 * init-model, LoRA targets, abliteration, exports) derives from the layout. The four families here share the
 * pre-norm Llama layout ({@link #layout}); a family with other blocks or norms overrides it.
 */
public enum Architecture {
    /** LlamaForCausalLM: biases only when {@code attention_bias}/{@code mlp_bias} say so. */
    LLAMA("llama", "LlamaForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            boolean attention = keys.optionalBoolean("attention_bias", false);
            return new Biases(attention, attention, keys.optionalBoolean("mlp_bias", false));
        }
    },
    /** MistralForCausalLM: Llama's layout without biases; may declare a sliding window. */
    MISTRAL("mistral", "MistralForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return new Biases(false, false, false);
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return keys.window("sliding_window");
        }
    },
    /** Qwen2ForCausalLM: q/k/v always carry a bias, o_proj never does. */
    QWEN2("qwen2", "Qwen2ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return new Biases(true, false, false);
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return fullAttentionQwen(keys);
        }
    },
    /** Qwen3ForCausalLM: per-head RMSNorm of q and k before RoPE; head_dim defaults to 128. */
    QWEN3("qwen3", "Qwen3ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            boolean attention = keys.optionalBoolean("attention_bias", false);
            return new Biases(attention, attention, false);
        }

        @Override
        boolean normalizesQueriesAndKeys() {
            return true;
        }

        @Override
        int defaultHeadDim(int hidden, int heads) {
            return 128; // Qwen3Config's default, not hidden/heads (transformers' configuration_qwen3)
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return fullAttentionQwen(keys);
        }
    },
    /**
     * GraniteForCausalLM: Llama's layout with four scalars: embeddings times {@code embedding_multiplier}, each
     * block's output times {@code residual_multiplier}, {@code attention_multiplier} as the attention scale and the
     * logits divided by {@code logits_scaling}.
     */
    GRANITE("granite", "GraniteForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return LLAMA.biases(keys);
        }

        @Override
        FamilyOptions options(ModelConfig.Reader keys, int layers) {
            return new FamilyOptions(keys.optionalDouble("embedding_multiplier", 1.0),
                    keys.optionalDouble("residual_multiplier", 1.0),
                    keys.optionalNumber("attention_multiplier"), keys.optionalDouble("logits_scaling", 1.0),
                    List.of(), partialRotaryFactor(keys), List.of(), GatedMlp.Activation.SILU, 0, 0,
                    OptionalDouble.empty());
        }
    },
    /**
     * Olmo2ForCausalLM: norms after the blocks (post_attention_layernorm on attention's output,
     * post_feedforward_layernorm on the MLP's, each before its residual add; nothing normed before a block), and
     * q_norm/k_norm over the whole q and k projections before they are split into heads.
     */
    OLMO2("olmo2", "Olmo2ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            boolean attention = keys.optionalBoolean("attention_bias", false);
            return new Biases(attention, attention, false);
        }

        @Override
        boolean normalizesQueriesAndKeys() {
            return true;
        }

        @Override
        boolean normsPerHead() {
            return false;
        }

        @Override
        Norms norms() {
            return Norms.AFTER;
        }
    },
    /**
     * Gemma2ForCausalLM: RMSNorm by {@code 1 + weight} in float32, four norms per layer (around attention and
     * around the MLP), embeddings times {@code sqrt(hidden_size)}, attention scaled by
     * {@code query_pre_attn_scalar^-0.5} with its scores soft-capped ({@code attn_logit_softcapping}), the sliding
     * window on the layers {@code layer_types} calls sliding (by default every other one, from the first), a GeGLU MLP
     * and soft-capped logits ({@code final_logit_softcapping}).
     */
    GEMMA2("gemma2", "Gemma2ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            boolean attention = keys.optionalBoolean("attention_bias", false);
            return new Biases(attention, attention, false);
        }

        @Override
        int defaultHeadDim(int hidden, int heads) {
            return 256; // Gemma2Config's default
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return (int) keys.numberOr("sliding_window", 4096).orElse(0);
        }

        @Override
        Norms norms() {
            return Norms.AROUND;
        }

        @Override
        boolean unitOffsetNorms() {
            return true;
        }

        @Override
        boolean tiesEmbeddingsByDefault() {
            return true;
        }

        @Override
        public GatedMlp.Activation activation() {
            return GatedMlp.Activation.GELU_TANH;
        }

        @Override
        FamilyOptions options(ModelConfig.Reader keys, int layers) {
            return gemmaOptions(keys, layers, 2, 50.0, 30.0, OptionalDouble.empty());
        }
    },
    /**
     * Gemma3ForCausalLM (the text model, {@code gemma3_text}): Gemma 2's block (it asks GEMMA2 for those facts, so
     * they are stated once) without the soft caps by default, with
     * per-head q/k norms (1 + weight), {@code sliding_window_pattern} (every N-th layer full, by default 6) or
     * {@code layer_types}, and the sliding layers' own RoPE base ({@code rope_local_base_freq}, or
     * {@code rope_parameters.sliding_attention} in transformers 5).
     */
    GEMMA3("gemma3_text", "Gemma3ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return GEMMA2.biases(keys);
        }

        @Override
        boolean normalizesQueriesAndKeys() {
            return true;
        }

        @Override
        int defaultHeadDim(int hidden, int heads) {
            return GEMMA2.defaultHeadDim(hidden, heads); // Gemma3TextConfig's default is Gemma 2's, 256
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return GEMMA2.slidingWindow(keys);
        }

        @Override
        Norms norms() {
            return GEMMA2.norms();
        }

        @Override
        boolean unitOffsetNorms() {
            return GEMMA2.unitOffsetNorms();
        }

        @Override
        boolean tiesEmbeddingsByDefault() {
            return GEMMA2.tiesEmbeddingsByDefault();
        }

        @Override
        boolean ropePerLayerType() {
            return true;
        }

        @Override
        public GatedMlp.Activation activation() {
            return GEMMA2.activation();
        }

        @Override
        FamilyOptions options(ModelConfig.Reader keys, int layers) {
            int pattern = keys.optionalInt("sliding_window_pattern", 6);
            OptionalDouble local = keys.localRopeTheta();
            return gemmaOptions(keys, layers, pattern, 0, 0,
                    OptionalDouble.of(local.isPresent() ? local.getAsDouble()
                            : keys.optionalDouble("rope_local_base_freq", 10000.0)));
        }
    },
    /**
     * Phi3ForCausalLM (Phi-3, Phi-4-mini): q, k and v as one {@code qkv_proj}, gate and up as one
     * {@code gate_up_proj}, both split after the product; RoPE on the first {@code partial_rotary_factor} of each
     * head; a {@code sliding_window} on every layer when given; no biases.
     */
    PHI3("phi3", "Phi3ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return new Biases(false, false, false);
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return keys.window("sliding_window");
        }

        @Override
        boolean fusesProjections() {
            return true;
        }

    },
    /**
     * SmolLM3ForCausalLM: Llama's layout where {@code no_rope_layers} (a 0 per layer without positions; by default
     * every {@code no_rope_layer_interval}-th layer) apply no rotary embedding, and, with
     * {@code use_sliding_window}, a window on the layers {@code layer_types} calls sliding.
     */
    SMOLLM3("smollm3", "SmolLM3ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return LLAMA.biases(keys);
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return keys.optionalBoolean("use_sliding_window", false) ? keys.window("sliding_window") : 0;
        }

        @Override
        FamilyOptions options(ModelConfig.Reader keys, int layers) {
            List<Integer> flags = keys.intList("no_rope_layers");
            if (flags == null) {
                int interval = keys.optionalInt("no_rope_layer_interval", 4);
                flags = new ArrayList<>();
                for (int layer = 0; layer < layers; layer++) {
                    flags.add((layer + 1) % interval != 0 ? 1 : 0);
                }
            }
            if (flags.size() != layers) {
                throw new UserInputException(keys.source() + ": no_rope_layers has " + flags.size()
                        + " entries for " + layers + " layers");
            }
            List<Integer> positionless = new ArrayList<>();
            for (int layer = 0; layer < layers; layer++) {
                if (flags.get(layer) == 0) {
                    positionless.add(layer);
                }
            }
            List<Boolean> sliding = List.of();
            if (slidingWindow(keys) > 0) {
                List<String> types = keys.layerTypes(layers);
                sliding = types == null ? positionlessAsSliding(layers, positionless)
                        : types.stream().map("sliding_attention"::equals).toList();
            }
            return new FamilyOptions(1.0, 1.0, OptionalDouble.empty(), 1.0, positionless, partialRotaryFactor(keys),
                    sliding, GatedMlp.Activation.SILU, 0, 0, OptionalDouble.empty());
        }

        /** SmolLM3Config's default layer_types: with a window, the NoPE layers slide and the others attend fully. */
        private static List<Boolean> positionlessAsSliding(int layers, List<Integer> positionless) {
            List<Boolean> sliding = new ArrayList<>();
            for (int layer = 0; layer < layers; layer++) {
                sliding.add(positionless.contains(layer));
            }
            return sliding;
        }
    },
    /**
     * Qwen3MoeForCausalLM: Qwen3's attention; the MLP of each layer that {@code mlp_only_layers} and
     * {@code decoder_sparse_step} make sparse is a mixture ({@code mlp.gate}, {@code mlp.experts.N.*_proj}).
     */
    QWEN3_MOE("qwen3_moe", "Qwen3MoeForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return QWEN3.biases(keys);
        }

        @Override
        boolean normalizesQueriesAndKeys() {
            return true;
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return QWEN3.slidingWindow(keys);
        }

        @Override
        Experts experts(ModelConfig.Reader keys) {
            // Qwen3MoeConfig's defaults (transformers' configuration_qwen3_moe).
            return keys.experts(128, 8, keys.optionalInt("moe_intermediate_size", 768),
                    keys.optionalBoolean("norm_topk_prob", false));
        }

        @Override
        Block feedForward(ModelConfig config, int layer, String prefix, GatedMlp dense) {
            return config.experts().sparse(layer)
                    ? mixture(config, layer, prefix + "mlp.", "gate_proj", "up_proj", "down_proj") : dense;
        }
    },
    /**
     * MixtralForCausalLM: Mistral's attention; every MLP is a mixture ({@code block_sparse_moe.gate},
     * {@code block_sparse_moe.experts.N.w1/w3/w2} for gate/up/down), the chosen experts' weights always renormalized.
     */
    MIXTRAL("mixtral", "MixtralForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            return MISTRAL.biases(keys);
        }

        @Override
        int slidingWindow(ModelConfig.Reader keys) {
            return MISTRAL.slidingWindow(keys);
        }

        @Override
        Experts experts(ModelConfig.Reader keys) {
            // MixtralConfig's defaults; the expert width is intermediate_size.
            return keys.experts(8, 2, keys.requiredInt("intermediate_size"), true);
        }

        @Override
        Block feedForward(ModelConfig config, int layer, String prefix, GatedMlp dense) {
            return mixture(config, layer, prefix + "block_sparse_moe.", "w1", "w3", "w2");
        }
    },
    /**
     * Lfm2ForCausalLM: short gated convolution layers beside attention layers ({@code layer_types}), each after
     * operator_norm, then the SwiGLU feed_forward (w1/w3/w2) after ffn_norm; per-head q/k layernorms; the norm before
     * the head is {@code embedding_norm}; {@code norm_eps}.
     */
    LFM2("lfm2", "Lfm2ForCausalLM") {
        @Override
        Biases biases(ModelConfig.Reader keys) {
            if (keys.optionalBoolean("conv_bias", false)) {
                throw new UserInputException(keys.source() + ": conv_bias true is not supported");
            }
            return new Biases(false, false, false);
        }

        @Override
        boolean normalizesQueriesAndKeys() {
            return true;
        }

        @Override
        double normEps(ModelConfig.Reader keys) {
            return keys.optionalDouble("norm_eps", 1e-5);
        }

        /** Lfm2MLP's width: intermediate_size, or with block_auto_adjust_ff_dim two thirds of it, scaled and rounded. */
        @Override
        int intermediateSize(ModelConfig.Reader keys) {
            int size = keys.requiredInt("intermediate_size");
            if (keys.optionalBoolean("block_auto_adjust_ff_dim", false)) {
                size = (int) (2.0 * size / 3);
                double multiplier = keys.optionalDouble("block_ffn_dim_multiplier", Double.NaN);
                if (!Double.isNaN(multiplier)) {
                    int multipleOf = keys.optionalInt("block_multiple_of", 256);
                    size = (int) (multiplier * size);
                    size = multipleOf * ((size + multipleOf - 1) / multipleOf);
                }
            }
            return size;
        }

        @Override
        Convolutions convolutions(ModelConfig.Reader keys) {
            return keys.convolutions(keys.optionalInt("conv_L_cache", 3));
        }

        @Override
        public ModelLayout layout(ModelConfig config) {
            long hidden = config.hiddenSize();
            int kernel = config.convolutions().length();
            List<Layer> layers = new ArrayList<>();
            for (int layer = 0; layer < config.numLayers(); layer++) {
                String prefix = "model.layers." + layer + ".";
                Block operator;
                if (config.convolutions().convolution(layer)) {
                    String conv = prefix + "conv.";
                    operator = new ShortConvolution(
                            new Linear(conv + "in_proj", Role.CONVOLUTION_INPUT, layer, hidden, 3 * hidden, false),
                            new Parameter(conv + "conv.weight", Role.CONVOLUTION_KERNEL, layer,
                                    new long[] {hidden, 1, kernel}, false),
                            new Linear(conv + "out_proj", Role.CONVOLUTION_OUTPUT, layer, hidden, hidden, false),
                            config.hiddenSize(), kernel);
                } else {
                    String attention = prefix + "self_attn.";
                    long queryWidth = (long) config.numHeads() * config.headDim();
                    long keyValueWidth = (long) config.numKvHeads() * config.headDim();
                    operator = new Attention(
                            new Linear(attention + "q_proj", Role.ATTENTION_QUERY, layer, hidden, queryWidth, false),
                            new Linear(attention + "k_proj", Role.ATTENTION_KEY, layer, hidden, keyValueWidth, false),
                            new Linear(attention + "v_proj", Role.ATTENTION_VALUE, layer, hidden, keyValueWidth, false),
                            new Linear(attention + "out_proj", Role.ATTENTION_OUTPUT, layer, queryWidth, hidden, false),
                            new Norm(attention + "q_layernorm.weight", Role.QUERY_NORM, layer, config.headDim()),
                            new Norm(attention + "k_layernorm.weight", Role.KEY_NORM, layer, config.headDim()),
                            true, config.numHeads(), config.numKvHeads(), config.headDim(), 0,
                            1.0 / Math.sqrt(config.headDim()), config.headDim(), 0, 0, null);
                }
                String mlp = prefix + "feed_forward.";
                long intermediate = config.intermediateSize();
                layers.add(new Layer(layer, List.of(
                        new Residual(new Norm(prefix + "operator_norm.weight", Role.NORM, layer, hidden), operator),
                        new Residual(new Norm(prefix + "ffn_norm.weight", Role.NORM, layer, hidden), new GatedMlp(
                                new Linear(mlp + "w1", Role.MLP_GATE, layer, hidden, intermediate, false),
                                new Linear(mlp + "w3", Role.MLP_UP, layer, hidden, intermediate, false),
                                new Linear(mlp + "w2", Role.MLP_DOWN, layer, intermediate, hidden, false))))));
            }
            long vocab = config.vocabSize();
            return new ModelLayout(className(),
                    new Parameter("model.embed_tokens.weight", Role.EMBEDDING, -1, new long[] {vocab, hidden}, false),
                    layers, new Norm("model.embedding_norm.weight", Role.NORM, -1, hidden),
                    new Parameter("lm_head.weight", Role.OUTPUT_HEAD, -1, new long[] {vocab, hidden}, false),
                    config.tieWordEmbeddings(), 1.0, 1.0, false, 0);
        }
    };

    /** Which projections carry a bias: q/k/v, o_proj, and the MLP's. */
    record Biases(boolean qkv, boolean output, boolean mlp) {
    }

    private final String modelType;
    private final String className;

    Architecture(String modelType, String className) {
        this.modelType = modelType;
        this.className = className;
    }

    /** The {@code model_type} of config.json. */
    public String modelType() {
        return modelType;
    }

    /** The transformers class named in {@code architectures}. */
    public String className() {
        return className;
    }

    /** Which projections carry a bias, as this family reads config.json. */
    abstract Biases biases(ModelConfig.Reader keys);

    /** Whether attention normalizes each head of queries and keys before RoPE. */
    boolean normalizesQueriesAndKeys() {
        return false;
    }

    /** Whether the q/k norms act on each head (Qwen3) rather than on the whole projection (OLMo 2). */
    boolean normsPerHead() {
        return true;
    }

    /** Where a layer's RMSNorms sit around its two blocks. */
    enum Norms {
        /** input_layernorm before attention, post_attention_layernorm before the MLP (Llama). */
        BEFORE,
        /** post_attention_layernorm on attention's output, post_feedforward_layernorm on the MLP's (OLMo 2). */
        AFTER,
        /** Both: input/post_attention around attention, pre/post_feedforward around the MLP (Gemma). */
        AROUND
    }

    Norms norms() {
        return Norms.BEFORE;
    }

    /** Whether the RMSNorm weights are stored as offsets from one (Gemma multiplies by {@code 1 + weight}). */
    boolean unitOffsetNorms() {
        return false;
    }

    /** The gated MLP's activation; config.json must name it ({@code hidden_act}/{@code hidden_activation}). */
    public GatedMlp.Activation activation() {
        return GatedMlp.Activation.SILU;
    }

    /** {@code tie_word_embeddings} when config.json leaves it out: transformers' default for the family. */
    boolean tiesEmbeddingsByDefault() {
        return false;
    }

    /** Whether q/k/v and gate/up are stored fused ({@code qkv_proj}, {@code gate_up_proj}), as Phi-3 stores them. */
    boolean fusesProjections() {
        return false;
    }

    /** What the family's own keys say; the default is none of them but the rotary share every family may set. */
    FamilyOptions options(ModelConfig.Reader keys, int layers) {
        return FamilyOptions.NONE.withPartialRotaryFactor(partialRotaryFactor(keys));
    }

    /**
     * Gemma's keys: the window on the layers {@code layer_types} calls sliding, else on all but every
     * {@code pattern}-th; the GeGLU activation; embeddings times {@code sqrt(hidden_size)}; the attention scale
     * {@code query_pre_attn_scalar^-0.5}; the soft caps (their family default when absent, none when null).
     */
    private static FamilyOptions gemmaOptions(ModelConfig.Reader keys, int layers, int pattern, double attentionCap,
                                              double logitCap, OptionalDouble localRopeTheta) {
        List<String> types = keys.layerTypes(layers);
        List<Boolean> sliding = new ArrayList<>();
        for (int layer = 0; layer < layers; layer++) {
            sliding.add(types == null ? (layer + 1) % pattern != 0 : types.get(layer).equals("sliding_attention"));
        }
        String activation = keys.activation(GatedMlp.Activation.GELU_TANH.configName());
        if (!activation.equals(GatedMlp.Activation.GELU_TANH.configName())) {
            throw new UserInputException(keys.source() + ": hidden_activation '" + activation
                    + "' is not supported for Gemma; its MLP here uses gelu_pytorch_tanh");
        }
        double scalar = keys.optionalDouble("query_pre_attn_scalar", 256);
        return new FamilyOptions(Math.sqrt(keys.hiddenSize()), 1.0, OptionalDouble.of(1.0 / Math.sqrt(scalar)), 1.0,
                List.of(), partialRotaryFactor(keys), sliding, GatedMlp.Activation.GELU_TANH,
                keys.numberOr("attn_logit_softcapping", attentionCap).orElse(0),
                keys.numberOr("final_logit_softcapping", logitCap).orElse(0), localRopeTheta);
    }

    /** Whether transformers 5 may give this family's {@code rope_parameters} per layer type (Gemma 3). */
    boolean ropePerLayerType() {
        return false;
    }

    /**
     * {@code partial_rotary_factor}, which transformers' rotary initialization reads for every family (Phi-3 sets
     * it), 1 when absent.
     */
    static double partialRotaryFactor(ModelConfig.Reader keys) {
        double factor = keys.ropeNumber("partial_rotary_factor").orElse(1.0);
        if (!(factor > 0 && factor <= 1)) {
            throw new UserInputException(keys.source() + ": partial_rotary_factor must be in (0, 1], got " + factor);
        }
        return factor;
    }

    /** The head width when config.json gives none: what transformers derives for this family. */
    int defaultHeadDim(int hidden, int heads) {
        return hidden / heads;
    }

    /** The attention window in tokens this family reads from config.json, 0 for full attention. */
    int slidingWindow(ModelConfig.Reader keys) {
        return 0;
    }

    /** The RMSNorm epsilon this family reads from config.json. */
    double normEps(ModelConfig.Reader keys) {
        return keys.optionalDouble("rms_norm_eps", 1e-6);
    }

    /** The dense MLP's width this family reads from config.json. */
    int intermediateSize(ModelConfig.Reader keys) {
        return keys.requiredInt("intermediate_size");
    }

    /** The short-convolution layers this family reads from config.json, {@link Convolutions#NONE} for none. */
    Convolutions convolutions(ModelConfig.Reader keys) {
        return Convolutions.NONE;
    }

    /** The mixture of experts this family reads from config.json, {@link Experts#NONE} for a dense MLP. */
    Experts experts(ModelConfig.Reader keys) {
        return Experts.NONE;
    }

    /** Layer {@code layer}'s MLP block: the dense gated MLP the layout made, unless the family has another. */
    Block feedForward(ModelConfig config, int layer, String prefix, GatedMlp dense) {
        return dense;
    }

    /** A mixture under {@code module}: its router {@code module + "gate"}, expert N's projections under experts.N. */
    static MixtureOfExperts mixture(ModelConfig config, int layer, String module, String gate, String up,
                                    String down) {
        Experts experts = config.experts();
        long hidden = config.hiddenSize();
        List<GatedMlp> mlps = new ArrayList<>();
        for (int expert = 0; expert < experts.count(); expert++) {
            String prefix = module + "experts." + expert + ".";
            mlps.add(new GatedMlp(
                    new Linear(prefix + gate, Role.MLP_GATE, layer, hidden, experts.width(), false),
                    new Linear(prefix + up, Role.MLP_UP, layer, hidden, experts.width(), false),
                    new Linear(prefix + down, Role.MLP_DOWN, layer, experts.width(), hidden, false)));
        }
        return new MixtureOfExperts(new Linear(module + "gate", Role.ROUTER, layer, hidden, experts.count(), false),
                mlps, experts.perToken(), experts.normalize());
    }

    private static int fullAttentionQwen(ModelConfig.Reader keys) {
        if (keys.optionalBoolean("use_sliding_window", false)) {
            throw new UserInputException(keys.source() + ": use_sliding_window true is not supported; "
                    + "only full-attention Qwen checkpoints run here");
        }
        return 0;
    }

    /**
     * The model's layout: the decoder of Llama and the families like it, transformers' names. Each layer is attention
     * (q, k, v, o; q/k norms where the family has them) then the gated MLP (gate, up, down), each added to the
     * residual stream after its norm (input_layernorm, post_attention_layernorm) or, in OLMo 2, with its output
     * normed (post_attention_layernorm, post_feedforward_layernorm).
     */
    public ModelLayout layout(ModelConfig config) {
        FamilyOptions options = config.options();
        long hidden = config.hiddenSize();
        int headDim = config.headDim();
        long queryWidth = (long) config.numHeads() * headDim;
        long keyValueWidth = (long) config.numKvHeads() * headDim;
        long intermediate = config.intermediateSize();
        double attentionScale = options.attentionMultiplier().orElse(1.0 / Math.sqrt(headDim));
        int rotaryDims = config.rotaryDims();
        List<Layer> layers = new ArrayList<>();
        for (int layer = 0; layer < config.numLayers(); layer++) {
            String prefix = "model.layers." + layer + ".";
            String attention = prefix + "self_attn.";
            String mlp = prefix + "mlp.";
            boolean perHead = normsPerHead();
            Norm queryNorm = config.qkNorm() ? new Norm(attention + "q_norm.weight", Role.QUERY_NORM, layer,
                    perHead ? headDim : queryWidth) : null;
            Norm keyNorm = config.qkNorm() ? new Norm(attention + "k_norm.weight", Role.KEY_NORM, layer,
                    perHead ? headDim : keyValueWidth) : null;
            boolean fused = fusesProjections();
            Linear qkv = fused ? new Linear(attention + "qkv_proj", Role.ATTENTION_QKV, layer, hidden,
                    queryWidth + 2 * keyValueWidth, config.qkvBias()) : null;
            Attention attentionBlock = new Attention(
                    fused ? null : new Linear(attention + "q_proj", Role.ATTENTION_QUERY, layer, hidden, queryWidth,
                            config.qkvBias()),
                    fused ? null : new Linear(attention + "k_proj", Role.ATTENTION_KEY, layer, hidden, keyValueWidth,
                            config.qkvBias()),
                    fused ? null : new Linear(attention + "v_proj", Role.ATTENTION_VALUE, layer, hidden,
                            keyValueWidth, config.qkvBias()),
                    new Linear(attention + "o_proj", Role.ATTENTION_OUTPUT, layer, queryWidth, hidden,
                            config.outputBias()),
                    queryNorm, keyNorm, perHead, config.numHeads(), config.numKvHeads(), headDim,
                    config.windowOf(layer), attentionScale,
                    options.positionlessLayers().contains(layer) ? 0 : rotaryDims,
                    options.localRopeTheta().isPresent() && config.windowOf(layer) > 0 ? 1 : 0,
                    options.attentionSoftcap(), qkv);
            Linear down = new Linear(mlp + "down_proj", Role.MLP_DOWN, layer, intermediate, hidden, config.mlpBias());
            GatedMlp denseMlp = fused
                    ? GatedMlp.fused(new Linear(mlp + "gate_up_proj", Role.MLP_GATE_UP, layer, hidden,
                            2 * intermediate, config.mlpBias()), down, options.activation())
                    : new GatedMlp(
                            new Linear(mlp + "gate_proj", Role.MLP_GATE, layer, hidden, intermediate, config.mlpBias()),
                            new Linear(mlp + "up_proj", Role.MLP_UP, layer, hidden, intermediate, config.mlpBias()),
                            down, null, options.activation());
            Block mlpBlock = feedForward(config, layer, prefix, denseMlp);
            double scale = options.residualMultiplier();
            Norm input = new Norm(prefix + "input_layernorm.weight", Role.NORM, layer, hidden);
            Norm postAttention = new Norm(prefix + "post_attention_layernorm.weight", Role.NORM, layer, hidden);
            Norm preFeedforward = new Norm(prefix + "pre_feedforward_layernorm.weight", Role.NORM, layer, hidden);
            Norm postFeedforward = new Norm(prefix + "post_feedforward_layernorm.weight", Role.NORM, layer, hidden);
            layers.add(new Layer(layer, switch (norms()) {
                case BEFORE -> List.of(new Residual(input, attentionBlock, null, scale),
                        new Residual(postAttention, mlpBlock, null, scale));
                case AFTER -> List.of(new Residual(null, attentionBlock, postAttention, scale),
                        new Residual(null, mlpBlock, postFeedforward, scale));
                case AROUND -> List.of(new Residual(input, attentionBlock, postAttention, scale),
                        new Residual(preFeedforward, mlpBlock, postFeedforward, scale));
            }));
        }
        long vocab = config.vocabSize();
        return new ModelLayout(className,
                new Parameter("model.embed_tokens.weight", Role.EMBEDDING, -1, new long[] {vocab, hidden}, false),
                layers, new Norm("model.norm.weight", Role.NORM, -1, hidden),
                new Parameter("lm_head.weight", Role.OUTPUT_HEAD, -1, new long[] {vocab, hidden}, false),
                config.tieWordEmbeddings(), options.embeddingMultiplier(), 1.0 / options.logitsScaling(),
                unitOffsetNorms(), options.logitSoftcap());
    }

    /** Architectures named by {@code model_type}; an unknown one is the user's to fix. */
    public static Architecture fromModelType(String modelType) {
        String wanted = modelType == null ? "" : modelType.trim().toLowerCase(Locale.ROOT);
        for (Architecture architecture : values()) {
            if (architecture.modelType.equals(wanted)) {
                return architecture;
            }
        }
        throw new UserInputException("model_type '" + modelType + "' is not supported; supported: " + supported());
    }

    /** Checks the {@code architectures} list of config.json, when present, names a causal-LM class we run. */
    static void checkClassName(String className) {
        for (Architecture architecture : values()) {
            if (architecture.className.equals(className)) {
                return;
            }
        }
        throw new UserInputException("architecture '" + className + "' is not supported; supported: "
                + Arrays.stream(values()).map(Architecture::className).collect(Collectors.joining(", ")));
    }

    static String supported() {
        return Arrays.stream(values()).map(Architecture::modelType).collect(Collectors.joining(", "));
    }
}
