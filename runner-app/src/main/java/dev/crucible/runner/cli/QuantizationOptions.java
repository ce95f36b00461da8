package dev.crucible.runner.cli;

import dev.crucible.api.quant.QuantizationConfig;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * {@code --quantization}, {@code --quant-scheme}, {@code --quant-block-size} and {@code --quant-exclude}: how a
 * command keeps the model's projection weights while it runs ({@link QuantizationConfig}).
 */
public final class QuantizationOptions {
    @Option(names = "--quantization", paramLabel = "Q", defaultValue = "none",
            description = "Keep projection weights as none, int8, int4 or nf4 while the model runs; they are quantized as they load (default: ${DEFAULT-VALUE}).")
    String method;

    @Option(names = "--quant-scheme", paramLabel = "S",
            description = "per-channel (one scale per output row), blockwise or asymmetric (zero points); default: per-channel for int8, blockwise for int4 and nf4.")
    String scheme;

    @Option(names = "--quant-block-size", paramLabel = "N",
            description = "Weights per scale for blockwise and asymmetric (default: 32 for int4, 128 for int8, 64 for nf4; asymmetric is per channel without it).")
    Integer blockSize;

    @Option(names = "--quant-exclude", paramLabel = "NAMES", split = ",",
            description = "Weights or modules kept in full precision, names or globs, comma-separated or repeated (default: lm_head,model.embed_tokens; 'none' for nothing).")
    List<String> exclude;

    /** The configuration the flags describe (exit 2 with one line for a bad one). */
    public QuantizationConfig config() {
        return QuantizationConfig.parse(method, scheme, blockSize, exclude, false);
    }
}
