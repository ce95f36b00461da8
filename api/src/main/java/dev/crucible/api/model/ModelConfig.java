package dev.crucible.api.model;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.model.layout.GatedMlp;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.Set;

/**
 * What the model definition needs from a Hugging Face {@code config.json}, with transformers' defaults and
 * per-architecture facts already applied, so nothing downstream re-reads JSON or asks which family a model is.
 *
 * @param headDim        per-head width; explicit in the file or derived as transformers derives it
 * @param qkvBias        q/k/v projections carry a bias (Qwen2 always; Llama with {@code attention_bias})
 * @param outputBias     o_proj carries a bias (Llama/Qwen3 with {@code attention_bias}; never Qwen2)
 * @param mlpBias        gate/up/down carry a bias (Llama {@code mlp_bias})
 * @param qkNorm         per-head RMSNorm of queries and keys before RoPE (Qwen3)
 * @param slidingWindow  attention window in tokens (Mistral's, on every layer), 0 for full attention
 * @param eosTokenIds    every end-of-sequence id (config.json allows a number or a list), possibly empty
 * @param dtype          the checkpoint's declared dtype ({@code torch_dtype}/{@code dtype}), F32 when absent
 * @param options        what the family's own keys say ({@link FamilyOptions#NONE} for Llama and its like)
 * @param experts        the mixture-of-experts MLP (Qwen3-MoE, Mixtral), {@link Experts#NONE} for a dense one
 * @param convolutions   the short-convolution layers (LFM2), {@link Convolutions#NONE} where every layer attends
 */
public record ModelConfig(
        Architecture architecture,
        int hiddenSize,
        int intermediateSize,
        int numLayers,
        int numHeads,
        int numKvHeads,
        int headDim,
        int vocabSize,
        double rmsNormEps,
        double ropeTheta,
        RopeScaling ropeScaling,
        long maxPositionEmbeddings,
        boolean tieWordEmbeddings,
        boolean qkvBias,
        boolean outputBias,
        boolean mlpBias,
        boolean qkNorm,
        int slidingWindow,
        OptionalInt bosTokenId,
        List<Integer> eosTokenIds,
        OptionalInt padTokenId,
        DType dtype,
        FamilyOptions options,
        Experts experts,
        Convolutions convolutions) {

    public static final String FILE_NAME = "config.json";

    private static final JsonMapper JSON = JsonMapper.builder().build();

    public ModelConfig {
        Objects.requireNonNull(architecture, "architecture is null");
        Objects.requireNonNull(ropeScaling, "ropeScaling is null");
        Objects.requireNonNull(bosTokenId, "bosTokenId is null");
        Objects.requireNonNull(padTokenId, "padTokenId is null");
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(options, "options is null");
        Objects.requireNonNull(experts, "experts is null");
        Objects.requireNonNull(convolutions, "convolutions is null");
        eosTokenIds = List.copyOf(eosTokenIds);
        if (hiddenSize <= 0 || intermediateSize <= 0 || numLayers <= 0 || numHeads <= 0 || numKvHeads <= 0
                || headDim <= 0 || vocabSize <= 0) {
            throw new UserInputException("config.json has a non-positive size: hidden_size " + hiddenSize
                    + ", intermediate_size " + intermediateSize + ", num_hidden_layers " + numLayers
                    + ", num_attention_heads " + numHeads + ", num_key_value_heads " + numKvHeads
                    + ", head_dim " + headDim + ", vocab_size " + vocabSize);
        }
        if (numHeads % numKvHeads != 0) {
            throw new UserInputException("config.json: num_attention_heads " + numHeads
                    + " is not a multiple of num_key_value_heads " + numKvHeads);
        }
        // Sequence lengths are ints; a context beyond them is no real model's and would let sizes overflow.
        if (maxPositionEmbeddings < 1 || maxPositionEmbeddings > Integer.MAX_VALUE) {
            throw new UserInputException("config.json: max_position_embeddings must be between 1 and "
                    + Integer.MAX_VALUE + ", got " + maxPositionEmbeddings);
        }
        if (headDim % 2 != 0) {
            throw new UserInputException("config.json: head_dim " + headDim + " is odd; rotary embeddings need it even");
        }
    }

    /** The longest sequence, prompt and generated tokens together: {@code max_position_embeddings}. */
    public long contextLength() {
        return maxPositionEmbeddings;
    }

    /** {@link #contextLength()} for messages: "the model's context of 4,096 tokens". */
    public String describeContext() {
        return String.format(Locale.ROOT, "the model's context of %,d tokens", contextLength());
    }

    /** The attention window of {@code layer} in tokens, 0 when it attends to every earlier token. */
    public int windowOf(int layer) {
        List<Boolean> sliding = options.slidingLayers();
        return sliding.isEmpty() || sliding.get(layer) ? slidingWindow : 0;
    }

    /** How many leading dimensions of each head rotary embeddings rotate (transformers' {@code int(head_dim · factor)}). */
    public int rotaryDims() {
        return (int) (headDim * options.partialRotaryFactor());
    }

    /** The model as its family lays it out: parameters, their roles, and the blocks of every layer. */
    public ModelLayout layout() {
        return architecture.layout(this);
    }

    /** Query heads per key/value head. */
    public int groupSize() {
        return numHeads / numKvHeads;
    }

    /** Reads {@code modelDir/config.json}. */
    public static ModelConfig read(Path modelDir) {
        Path file = Files.isDirectory(modelDir) ? modelDir.resolve(FILE_NAME) : modelDir;
        if (!Files.isRegularFile(file)) {
            throw new UserInputException(file + " does not exist; point at a Hugging Face model folder");
        }
        try {
            return parse(Files.readString(file), file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /** Parses config.json text; {@code source} names it in error messages. */
    public static ModelConfig parse(String json, String source) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new UserInputException(source + ": not valid JSON (" + e.getOriginalMessage().lines().findFirst()
                    .orElse("") + ")");
        }
        if (root == null || !root.isObject()) {
            throw new UserInputException(source + ": expected a JSON object");
        }
        return new Reader(root, source).config();
    }

    /** One parse of one file, so every error can name the file; families read their own keys through it. */
    record Reader(JsonNode root, String source) {

        ModelConfig config() {
            Architecture architecture = Architecture.fromModelType(requiredText("model_type"));
            JsonNode classes = root.get("architectures");
            if (classes != null && classes.isArray() && !classes.isEmpty()) {
                Architecture.checkClassName(classes.get(0).asText());
            }
            String activation = optionalText("hidden_act", optionalText("hidden_activation", "silu"));
            if (architecture.activation() == GatedMlp.Activation.SILU && !activation.equals("silu")
                    && !activation.equals("swish")) {
                throw new UserInputException(source + ": hidden_act '" + activation
                        + "' is not supported; the gated MLP here uses silu");
            }
            int hidden = requiredInt("hidden_size");
            int heads = requiredInt("num_attention_heads");
            int kvHeads = optionalInt("num_key_value_heads", heads);
            int headDim = headDim(architecture, hidden, heads);
            Architecture.Biases biases = architecture.biases(this);
            JsonNode ropeParameters = root.get("rope_parameters");
            if (ropeParameters != null && (ropeParameters.has("full_attention")
                    || ropeParameters.has("sliding_attention"))) {
                if (!architecture.ropePerLayerType()) {
                    throw new UserInputException(source + ": rope_parameters per layer type is not supported for "
                            + architecture.modelType() + "; its layers share one rotary embedding here");
                }
                // Gemma 3 in transformers 5: the full-attention layers' entry is the model's RoPE; the sliding
                // layers' base is read with the family's options (localRopeTheta).
                ropeParameters = ropeParameters.get("full_attention");
            }
            double ropeTheta = ropeParameters != null && ropeParameters.has("rope_theta")
                    ? ropeParameters.get("rope_theta").asDouble()
                    : optionalDouble("rope_theta", 10000.0);
            JsonNode scalingNode = root.get("rope_scaling");
            if ((scalingNode == null || scalingNode.isNull()) && ropeParameters != null) {
                scalingNode = ropeParameters;
            }
            int intermediate = architecture.intermediateSize(this);
            int layers = requiredInt("num_hidden_layers");
            FamilyOptions options = architecture.options(this, layers);
            return new ModelConfig(
                    architecture,
                    hidden,
                    intermediate,
                    layers,
                    heads,
                    kvHeads,
                    headDim,
                    requiredInt("vocab_size"),
                    architecture.normEps(this),
                    ropeTheta,
                    ropeScaling(scalingNode),
                    optionalLong("max_position_embeddings", 2048),
                    optionalBoolean("tie_word_embeddings", architecture.tiesEmbeddingsByDefault()),
                    biases.qkv(),
                    biases.output(),
                    biases.mlp(),
                    architecture.normalizesQueriesAndKeys(),
                    architecture.slidingWindow(this),
                    optionalTokenId("bos_token_id"),
                    tokenIds("eos_token_id"),
                    optionalTokenId("pad_token_id"),
                    dtype(),
                    options,
                    architecture.experts(this),
                    architecture.convolutions(this));
        }

        private int headDim(Architecture architecture, int hidden, int heads) {
            JsonNode node = root.get("head_dim");
            if (node != null && !node.isNull()) {
                return asInt("head_dim", node);
            }
            return architecture.defaultHeadDim(hidden, heads);
        }

        /**
         * The mixture of experts as transformers reads it, with the family's defaults for the expert count
         * ({@code num_experts}, or its alias {@code num_local_experts}) and experts per token.
         */
        Experts experts(int defaultCount, int defaultPerToken, int width, boolean normalize) {
            int count = optionalInt("num_experts", optionalInt("num_local_experts", defaultCount));
            Set<Integer> dense = new HashSet<>();
            JsonNode only = root.get("mlp_only_layers");
            if (only != null && !only.isNull()) {
                if (!only.isArray()) {
                    throw new UserInputException(source + ": mlp_only_layers must be a list of layer indices, got "
                            + only);
                }
                only.forEach(layer -> dense.add(asInt("mlp_only_layers", layer)));
            }
            return new Experts(count, optionalInt("num_experts_per_tok", defaultPerToken), width, normalize, dense,
                    optionalInt("decoder_sparse_step", 1));
        }

        /**
         * Which layers are short convolutions: {@code layer_types} ("conv" or "full_attention" per layer), else
         * every layer not in {@code full_attn_idxs} (none listed: every layer attends), as Lfm2Config derives it.
         */
        Convolutions convolutions(int kernel) {
            int layers = requiredInt("num_hidden_layers");
            Set<Integer> convolution = new HashSet<>();
            JsonNode types = root.get("layer_types");
            if (types != null && !types.isNull()) {
                if (!types.isArray() || types.size() != layers) {
                    throw new UserInputException(source + ": layer_types must list one type per layer ("
                            + layers + "), got " + types);
                }
                for (int layer = 0; layer < layers; layer++) {
                    String type = types.get(layer).asText();
                    switch (type) {
                        case "conv" -> convolution.add(layer);
                        case "full_attention" -> { }
                        default -> throw new UserInputException(source + ": layer_types entry '" + type
                                + "' is not supported; supported: conv, full_attention");
                    }
                }
            } else {
                JsonNode attention = root.get("full_attn_idxs");
                Set<Integer> attending = new HashSet<>();
                if (attention != null && !attention.isNull()) {
                    attention.forEach(layer -> attending.add(asInt("full_attn_idxs", layer)));
                    for (int layer = 0; layer < layers; layer++) {
                        if (!attending.contains(layer)) {
                            convolution.add(layer);
                        }
                    }
                }
            }
            return new Convolutions(kernel, convolution);
        }

        /** {@code key} as an attention window in tokens, 0 when absent. */
        int window(String key) {
            JsonNode window = root.get(key);
            return window == null || window.isNull() ? 0 : asInt(key, window);
        }

        private RopeScaling ropeScaling(JsonNode node) {
            if (node == null || node.isNull()) {
                return new RopeScaling.None();
            }
            if (!node.isObject()) {
                throw new UserInputException(source + ": rope_scaling must be an object or null");
            }
            JsonNode typeNode = node.has("rope_type") ? node.get("rope_type") : node.get("type");
            String type = typeNode == null || typeNode.isNull() ? "default" : typeNode.asText().toLowerCase(Locale.ROOT);
            return switch (type) {
                case "default" -> new RopeScaling.None();
                case "linear" -> new RopeScaling.Linear(requiredDouble(node, "factor"));
                case "llama3" -> new RopeScaling.Llama3(
                        requiredDouble(node, "factor"),
                        requiredDouble(node, "low_freq_factor"),
                        requiredDouble(node, "high_freq_factor"),
                        (long) requiredDouble(node, "original_max_position_embeddings"));
                default -> throw new UserInputException(source + ": rope_scaling type '" + type
                        + "' is not supported; supported: default, linear, llama3");
            };
        }

        private DType dtype() {
            String name = optionalText("torch_dtype", optionalText("dtype", "float32"));
            return switch (name.toLowerCase(Locale.ROOT)) {
                case "float32", "float" -> DType.F32;
                case "bfloat16" -> DType.BF16;
                case "float16", "half" -> DType.F16;
                default -> throw new UserInputException(source + ": torch_dtype '" + name
                        + "' is not supported; expected float32, bfloat16 or float16");
            };
        }

        private OptionalInt optionalTokenId(String key) {
            List<Integer> ids = tokenIds(key);
            return ids.isEmpty() ? OptionalInt.empty() : OptionalInt.of(ids.getFirst());
        }

        private List<Integer> tokenIds(String key) {
            JsonNode node = root.get(key);
            List<Integer> ids = new ArrayList<>();
            if (node == null || node.isNull()) {
                return ids;
            }
            if (node.isArray()) {
                for (JsonNode element : node) {
                    ids.add(asInt(key, element));
                }
            } else {
                ids.add(asInt(key, node));
            }
            return ids;
        }

        private String requiredText(String key) {
            JsonNode node = root.get(key);
            if (node == null || node.isNull() || !node.isTextual()) {
                throw new UserInputException(source + ": missing " + key + "; supported model types: "
                        + Architecture.supported());
            }
            return node.textValue();
        }

        String optionalText(String key, String fallback) {
            JsonNode node = root.get(key);
            return node == null || node.isNull() ? fallback : node.asText();
        }

        int requiredInt(String key) {
            JsonNode node = root.get(key);
            if (node == null || node.isNull()) {
                throw new UserInputException(source + ": missing " + key);
            }
            return asInt(key, node);
        }

        int optionalInt(String key, int fallback) {
            JsonNode node = root.get(key);
            return node == null || node.isNull() ? fallback : asInt(key, node);
        }

        private long optionalLong(String key, long fallback) {
            JsonNode node = root.get(key);
            if (node == null || node.isNull()) {
                return fallback;
            }
            if (!node.canConvertToLong()) {
                throw new UserInputException(source + ": " + key + " must be an integer, got " + node);
            }
            return node.asLong();
        }

        int hiddenSize() {
            return requiredInt("hidden_size");
        }

        /** The MLP activation's name: {@code hidden_activation} (Gemma's key), else {@code hidden_act}. */
        String activation(String fallback) {
            return optionalText("hidden_activation", optionalText("hidden_act", fallback));
        }

        /** {@code key} as a number: {@code fallback} when absent, empty when null (a feature switched off). */
        OptionalDouble numberOr(String key, double fallback) {
            JsonNode node = root.get(key);
            if (node == null) {
                return OptionalDouble.of(fallback);
            }
            return node.isNull() ? OptionalDouble.empty() : OptionalDouble.of(optionalDouble(key, 0));
        }

        /** {@code key} as a number, empty when absent or null. */
        OptionalDouble optionalNumber(String key) {
            JsonNode node = root.get(key);
            return node == null || node.isNull() ? OptionalDouble.empty() : OptionalDouble.of(optionalDouble(key, 0));
        }

        /**
         * {@code key} of the rotary settings: inside {@code rope_parameters} (transformers 5) or at the top level (the
         * hub's layout), empty when neither has it.
         */
        OptionalDouble ropeNumber(String key) {
            JsonNode rope = root.get("rope_parameters");
            if (rope != null && rope.has(key) && !rope.get(key).isNull()) {
                if (!rope.get(key).isNumber()) {
                    throw new UserInputException(source + ": rope_parameters." + key + " must be a number");
                }
                return OptionalDouble.of(rope.get(key).asDouble());
            }
            return optionalNumber(key);
        }

        /** {@code rope_parameters.sliding_attention.rope_theta} (transformers 5's Gemma 3 layout), empty without it. */
        OptionalDouble localRopeTheta() {
            JsonNode rope = root.get("rope_parameters");
            JsonNode sliding = rope == null ? null : rope.get("sliding_attention");
            if (sliding == null || !sliding.has("rope_theta")) {
                return OptionalDouble.empty();
            }
            JsonNode type = sliding.get("rope_type");
            if (type != null && !type.isNull() && !type.asText().equals("default")) {
                throw new UserInputException(source + ": rope_parameters.sliding_attention rope_type '" + type.asText()
                        + "' is not supported; the sliding layers here use default RoPE");
            }
            return OptionalDouble.of(sliding.get("rope_theta").asDouble());
        }

        /** {@code key} as a list of integers, null when absent or null. */
        List<Integer> intList(String key) {
            JsonNode node = root.get(key);
            if (node == null || node.isNull()) {
                return null;
            }
            if (!node.isArray()) {
                throw new UserInputException(source + ": " + key + " must be a list of integers, got " + node);
            }
            List<Integer> values = new ArrayList<>();
            for (JsonNode element : node) {
                values.add(asInt(key, element));
            }
            return values;
        }

        /**
         * {@code layer_types}, one of {@code full_attention} or {@code sliding_attention} per layer, null when absent;
         * any other type is one this definition does not compute, refused by name.
         */
        List<String> layerTypes(int layers) {
            JsonNode node = root.get("layer_types");
            if (node == null || node.isNull()) {
                return null;
            }
            List<String> types = new ArrayList<>();
            for (JsonNode element : node) {
                String type = element.asText();
                if (!type.equals("full_attention") && !type.equals("sliding_attention")) {
                    throw new UserInputException(source + ": layer_types entry '" + type + "' is not supported; "
                            + "supported: full_attention, sliding_attention");
                }
                types.add(type);
            }
            if (types.size() != layers) {
                throw new UserInputException(source + ": layer_types has " + types.size() + " entries for "
                        + layers + " layers");
            }
            return types;
        }

        double optionalDouble(String key, double fallback) {
            JsonNode node = root.get(key);
            if (node == null || node.isNull()) {
                return fallback;
            }
            if (!node.isNumber()) {
                throw new UserInputException(source + ": " + key + " must be a number, got " + node);
            }
            return node.asDouble();
        }

        private double requiredDouble(JsonNode parent, String key) {
            JsonNode node = parent.get(key);
            if (node == null || !node.isNumber()) {
                throw new UserInputException(source + ": rope_scaling needs a number " + key);
            }
            return node.asDouble();
        }

        boolean optionalBoolean(String key, boolean fallback) {
            JsonNode node = root.get(key);
            if (node == null || node.isNull()) {
                return fallback;
            }
            if (!node.isBoolean()) {
                throw new UserInputException(source + ": " + key + " must be true or false, got " + node);
            }
            return node.booleanValue();
        }

        private int asInt(String key, JsonNode node) {
            if (!node.isIntegralNumber() || !node.canConvertToInt()) {
                throw new UserInputException(source + ": " + key + " must be an integer, got " + node);
            }
            return node.intValue();
        }
    }
}
