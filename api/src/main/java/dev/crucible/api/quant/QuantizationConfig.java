package dev.crucible.api.quant;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a model's projection weights are kept while it runs: dense (no quantization), or 8-bit or 4-bit integers
 * with a per-channel or per-block scale (and zero points when asymmetric), or NF4 blocks. Biases, norms and every
 * weight matched by {@link #exclude} stay in full precision; by default that is the output head and the
 * embeddings, whose quantization costs the most quality for the least memory.
 *
 * @param method             none, int8, int4 or nf4
 * @param scheme             per-channel (symmetric, one scale per output row), blockwise (symmetric, one scale per
 *                           {@code blockSize} weights of a row) or asymmetric (a zero point beside each scale)
 * @param blockSize          weights per scale along a row; 0 for one scale per row
 * @param exclude            names or globs ({@code *} any characters, {@code ?} one) of weights or modules kept in
 *                           full precision; a plain name also covers everything under it
 *                           ({@code model.layers.0} excludes that layer)
 * @param dynamicActivations quantize activations to int8 per row at run time as well (a kernel may use it)
 */
public record QuantizationConfig(Method method, Scheme scheme, int blockSize, List<String> exclude,
                                 boolean dynamicActivations) {

    /** What {@code --quant-exclude} defaults to: the output head and the token embeddings. */
    public static final List<String> DEFAULT_EXCLUDE = List.of("lm_head", "model.embed_tokens");

    /** Dense weights: no quantization. */
    public static final QuantizationConfig NONE =
            new QuantizationConfig(Method.NONE, Scheme.PER_CHANNEL, 0, DEFAULT_EXCLUDE, false);

    /** The block of 64 QLoRA uses for NF4. */
    public static final int NF4_BLOCK = 64;

    public enum Method {
        NONE("none", 0), INT8("int8", 8), INT4("int4", 4), NF4("nf4", 4);

        private final String userName;
        private final int bits;

        Method(String userName, int bits) {
            this.userName = userName;
            this.bits = bits;
        }

        public String userName() {
            return userName;
        }

        public int bits() {
            return bits;
        }
    }

    public enum Scheme {
        PER_CHANNEL("per-channel"), BLOCKWISE("blockwise"), ASYMMETRIC("asymmetric");

        private final String userName;

        Scheme(String userName) {
            this.userName = userName;
        }

        public String userName() {
            return userName;
        }
    }

    public QuantizationConfig {
        Objects.requireNonNull(method, "method is null");
        Objects.requireNonNull(scheme, "scheme is null");
        exclude = List.copyOf(exclude);
        if (blockSize < 0) {
            throw new IllegalArgumentException("block size must be 0 (per channel) or positive, got " + blockSize);
        }
        if (scheme == Scheme.PER_CHANNEL && blockSize != 0) {
            throw new IllegalArgumentException("per-channel quantization has no block size, got " + blockSize);
        }
        if (scheme == Scheme.BLOCKWISE && blockSize == 0) {
            throw new IllegalArgumentException("blockwise quantization needs a block size");
        }
        if (method == Method.NF4 && (scheme == Scheme.ASYMMETRIC || blockSize == 0)) {
            throw new IllegalArgumentException("NF4 is blockwise and symmetric");
        }
    }

    /**
     * The configuration the user's strings describe, each checked with a one-line error naming its flag.
     *
     * @param method    none, int8, int4 or nf4 (case-insensitive)
     * @param scheme    per-channel, blockwise or asymmetric; null for the method's default (per-channel for int8,
     *                  blockwise for int4 and nf4)
     * @param blockSize weights per scale; null for the default (32 for int4, 128 for int8, 64 for nf4) where the
     *                  scheme has blocks, and none for per-channel (asymmetric is per channel unless given one)
     * @param exclude   the names and globs kept in full precision; null for {@link #DEFAULT_EXCLUDE}; the single
     *                  entry {@code none} (or an empty list) excludes nothing
     */
    public static QuantizationConfig parse(String method, String scheme, Integer blockSize, List<String> exclude,
                                           boolean dynamicActivations) {
        return parse(method, scheme, blockSize, exclude, dynamicActivations, Flags.RUN);
    }

    /** The names of the flags (or config keys) the strings came from, which the errors name. */
    public record Flags(String scheme, String blockSize, String exclude) {
        /** A command that runs the model: {@code --quant-scheme}, {@code --quant-block-size}, {@code --quant-exclude}. */
        public static final Flags RUN = new Flags("--quant-scheme", "--quant-block-size", "--quant-exclude");
    }

    /** {@link #parse(String, String, Integer, List, boolean)} with errors that name {@code flags}. */
    public static QuantizationConfig parse(String method, String scheme, Integer blockSize, List<String> exclude,
                                           boolean dynamicActivations, Flags flags) {
        Method parsedMethod = parseMethod(method);
        List<String> parsedExclude = parseExclude(exclude, flags);
        if (parsedMethod == Method.NONE) {
            if (scheme != null || blockSize != null) {
                throw new UserInputException(flags.scheme() + " and " + flags.blockSize() + " need --quantization int8, int4 "
                        + "or nf4 (it is none)");
            }
            return new QuantizationConfig(Method.NONE, Scheme.PER_CHANNEL, 0, parsedExclude, false);
        }
        Scheme parsedScheme = scheme == null
                ? (parsedMethod == Method.INT8 ? Scheme.PER_CHANNEL : Scheme.BLOCKWISE)
                : parseScheme(scheme, flags);
        if (parsedMethod == Method.NF4 && parsedScheme != Scheme.BLOCKWISE) {
            throw new UserInputException(flags.scheme() + " " + parsedScheme.userName() + " does not apply to nf4, "
                    + "which is blockwise and symmetric by definition; leave " + flags.scheme() + " out");
        }
        if (blockSize != null && parsedScheme == Scheme.PER_CHANNEL) {
            throw new UserInputException(flags.blockSize() + " needs " + flags.scheme() + " blockwise or asymmetric "
                    + "(per-channel has one scale per output row)");
        }
        int block;
        if (blockSize != null) {
            block = blockSize;
            if (block < 2 || block % 2 != 0) {
                throw new UserInputException(flags.blockSize() + " must be an even number of at least 2, got " + block);
            }
        } else if (parsedScheme == Scheme.BLOCKWISE) {
            block = switch (parsedMethod) {
                case INT8 -> 128;
                case INT4 -> 32;
                default -> NF4_BLOCK;
            };
        } else {
            block = 0;
        }
        if (dynamicActivations && parsedMethod == Method.NF4) {
            throw new UserInputException("dynamic int8 activations need int8 or int4 weights, not nf4");
        }
        return new QuantizationConfig(parsedMethod, parsedScheme, block, parsedExclude, dynamicActivations);
    }

    private static Method parseMethod(String text) {
        String wanted = Objects.requireNonNull(text, "method is null").strip().toLowerCase(Locale.ROOT);
        for (Method method : Method.values()) {
            if (method.userName.equals(wanted)) {
                return method;
            }
        }
        throw new UserInputException("--quantization '" + text + "' is not one of none, int8, int4, nf4");
    }

    private static Scheme parseScheme(String text, Flags flags) {
        String wanted = text.strip().toLowerCase(Locale.ROOT);
        for (Scheme scheme : Scheme.values()) {
            if (scheme.userName.equals(wanted)) {
                return scheme;
            }
        }
        throw new UserInputException(flags.scheme() + " '" + text + "' is not one of per-channel, blockwise, asymmetric");
    }

    private static List<String> parseExclude(List<String> exclude, Flags flags) {
        if (exclude == null) {
            return DEFAULT_EXCLUDE;
        }
        List<String> patterns = exclude.stream().map(String::strip).filter(p -> !p.isEmpty()).toList();
        if (patterns.size() == 1 && patterns.getFirst().equalsIgnoreCase("none")) {
            return List.of();
        }
        for (String pattern : patterns) {
            if (pattern.equalsIgnoreCase("none")) {
                throw new UserInputException(flags.exclude() + " none excludes nothing and takes no other names");
            }
        }
        return patterns;
    }

    public boolean enabled() {
        return method != Method.NONE;
    }

    /** The format quantized weights are kept in. */
    public WeightFormat format() {
        return switch (method) {
            case NONE -> throw new IllegalStateException("no quantization");
            case INT8, INT4 -> new WeightFormat.Int(method.bits(), blockSize, scheme == Scheme.ASYMMETRIC);
            case NF4 -> new WeightFormat.Nf4(blockSize);
        };
    }

    /** Whether the projection weight {@code weightName} (e.g. {@code model.layers.0.mlp.up_proj.weight}) is quantized. */
    public boolean quantizes(String weightName) {
        return enabled() && !excludes(weightName);
    }

    /** The format for the projection weight {@code weightName}: {@link #format()} or dense in {@code dense}. */
    public WeightFormat formatFor(String weightName, DType dense) {
        return quantizes(weightName) ? format() : WeightFormat.Dense.of(dense);
    }

    /** Whether {@link #exclude} keeps {@code weightName} (or its module) in full precision. */
    public boolean excludes(String weightName) {
        String module = weightName.endsWith(".weight") ? weightName.substring(0, weightName.length() - 7) : weightName;
        for (String pattern : exclude) {
            if (pattern.contains("*") || pattern.contains("?")) {
                Pattern glob = glob(pattern);
                if (glob.matcher(weightName).matches() || glob.matcher(module).matches()) {
                    return true;
                }
            } else if (weightName.equals(pattern) || module.equals(pattern) || weightName.startsWith(pattern + ".")) {
                return true;
            }
        }
        return false;
    }

    private static Pattern glob(String pattern) {
        StringBuilder regex = new StringBuilder();
        StringBuilder literal = new StringBuilder();
        for (char c : pattern.toCharArray()) {
            if (c == '*' || c == '?') {
                if (!literal.isEmpty()) {
                    regex.append(Pattern.quote(literal.toString()));
                    literal.setLength(0);
                }
                regex.append(c == '*' ? ".*" : ".");
            } else {
                literal.append(c);
            }
        }
        if (!literal.isEmpty()) {
            regex.append(Pattern.quote(literal.toString()));
        }
        return Pattern.compile(regex.toString());
    }

    /**
     * One line for a run's first lines, e.g. {@code int8 per-channel (symmetric); full precision: lm_head,
     * model.embed_tokens, biases and norms}.
     */
    public String describe() {
        if (!enabled()) {
            return "none (weights in the compute dtype)";
        }
        String how = switch (method) {
            case NF4 -> "nf4, blocks of " + blockSize;
            default -> method.userName() + " " + switch (scheme) {
                case PER_CHANNEL -> "per-channel (symmetric)";
                case BLOCKWISE -> "blockwise (symmetric, blocks of " + blockSize + ")";
                case ASYMMETRIC -> "asymmetric (zero points, " + (blockSize == 0 ? "per channel" : "blocks of "
                        + blockSize) + ")";
            };
        };
        return how + (dynamicActivations ? ", int8 activations" : "") + "; full precision: "
                + (exclude.isEmpty() ? "" : String.join(", ", exclude) + ", ") + "biases and norms";
    }
}
