package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.Host;
import dev.crucible.runner.export.BaseFiles;
import dev.crucible.runner.export.CompressedTensorsFolderWriter;
import dev.crucible.runner.export.ExportWeights;
import dev.crucible.runner.export.ExportedModel;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.units.ByteSize;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "quantize", mixinStandardHelpOptions = true,
        description = {"Write a copy of a model whose projection weights are stored as 8-bit or 4-bit integers in the "
                + "compressed-tensors layout that vLLM and transformers load (config.json quantization_config with "
                + "quant_method compressed-tensors; int8 weight + weight_scale (+ weight_zero_point), 4 bits packed "
                + "into int32). Every runner command loads the folder and runs it as stored. Embeddings, the output "
                + "head, norms and biases stay as they are.",
                "Example: runner quantize --model Qwen/Qwen2.5-0.5B-Instruct --bits 4 --out qwen-int4"})
public final class QuantizeCommand implements Callable<Integer> {
    private static final QuantizationConfig.Flags FLAGS =
            new QuantizationConfig.Flags("--scheme", "--block-size", "--exclude");

    private final Host host;

    @Spec
    CommandSpec spec;

    @Option(names = "--model", required = true, paramLabel = "M",
            description = "A model folder, or org/name[@revision] from the Hugging Face cache or hub.")
    String model;

    @Option(names = "--bits", required = true, paramLabel = "8|4", description = "8 (int8) or 4 (int4, packed into int32).")
    int bits;

    @Option(names = "--scheme", paramLabel = "S",
            description = "per-channel (one scale per output row), blockwise or asymmetric (zero points); default: per-channel for 8 bits, blockwise for 4.")
    String scheme;

    @Option(names = "--block-size", paramLabel = "N",
            description = "Weights per scale for blockwise and asymmetric (default: 32 for 4 bits, 128 for 8; asymmetric is per channel without it).")
    Integer blockSize;

    @Option(names = "--exclude", paramLabel = "NAMES", split = ",",
            description = "Projections kept in full precision, names or globs, comma-separated or repeated (default: none besides the output head and embeddings).")
    List<String> exclude;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "The folder to write.")
    Path out;

    @Option(names = "--max-shard-size", defaultValue = "5GB", description = "Largest safetensors shard (default: ${DEFAULT-VALUE}).")
    String maxShardSize;

    @Option(names = "--force", description = "Replace DIR when it exists.")
    boolean force;

    QuantizeCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        if (bits != 8 && bits != 4) {
            throw new UserInputException("--bits " + bits + " is not 8 or 4");
        }
        QuantizationConfig quantization = QuantizationConfig.parse(bits == 8 ? "int8" : "int4", scheme, blockSize,
                exclude, false, FLAGS);
        long maxShard = ByteSize.parse(maxShardSize, "--max-shard-size");
        ModelLocator.Located located = ModelSession.locateModel(host, model);
        ModelConfig config = ModelConfig.read(located.folder());
        BaseFiles base = BaseFiles.of(located.folder());
        OutputLocation.checkNewFolder(out, force, base.exportBytes());
        try (Checkpoint checkpoint = Checkpoint.open(located.folder())) {
            if (checkpoint.storedQuantization().enabled()) {
                throw new UserInputException(model + " is stored quantized already ("
                        + checkpoint.storedQuantization().describe() + "); quantize its full-precision original");
            }
            new CompressedTensorsFolderWriter(quantization, maxShard, (quantized, projections, bytes) ->
                    spec.commandLine().getOut().println("quantized " + quantized + " of " + projections
                            + " projections: " + quantization.describe() + "; weights "
                            + OutputLocation.bytes(base.weightBytes()) + " -> " + OutputLocation.bytes(bytes)))
                    .write(new ExportedModel(located, config, base,
                            Optional.of(ExportWeights.replacing(checkpoint, config.layout(), Map.of())), Optional.empty(),
                            Optional.empty(), folder -> { }), out, force);
        }
        spec.commandLine().getOut().println("wrote " + out);
        return 0;
    }
}
