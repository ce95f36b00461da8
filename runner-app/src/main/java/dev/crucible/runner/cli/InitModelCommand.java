package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.tensor.DType;
import dev.crucible.runner.model.CharTokenizerFiles;
import dev.crucible.runner.model.ModelInitializer;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "init-model", mixinStandardHelpOptions = true,
        description = {"Write a random-initialized Hugging Face model folder of any size, with a character-level tokenizer "
                + "(or a byte-pair one from --merges) and a ChatML chat template. Used by tests, benchmarks and the "
                + "demo model's recipe.",
                "Example (shaped like Qwen2.5-0.5B): runner init-model --like qwen2 --hidden 896 --layers 24 --heads 14 "
                        + "--kv-heads 2 --intermediate 4864 --vocab 151936 --dtype bfloat16 --out /tmp/qwen-shaped"})
public final class InitModelCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--like", paramLabel = "ARCH", defaultValue = "llama", description = "llama, mistral, qwen2 or qwen3 (default: ${DEFAULT-VALUE}).")
    String like;

    @Option(names = "--hidden", defaultValue = "64", description = "Hidden size (default: ${DEFAULT-VALUE}).")
    int hidden;

    @Option(names = "--layers", defaultValue = "2", description = "Decoder layers (default: ${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--heads", defaultValue = "4", description = "Attention heads (default: ${DEFAULT-VALUE}).")
    int heads;

    @Option(names = "--kv-heads", description = "Key/value heads for grouped-query attention (default: --heads).")
    Integer kvHeads;

    @Option(names = "--head-dim", description = "Width of one head (default: hidden / heads).")
    Integer headDim;

    @Option(names = "--intermediate", description = "MLP width (default: 8/3 of hidden, rounded up to a multiple of 32).")
    Integer intermediate;

    @Option(names = "--vocab", description = "Vocabulary rows; at least the tokenizer's size, which is the default.")
    Integer vocab;

    @Option(names = "--merges", paramLabel = "FILE", description = "Byte-pair merges, one 'left right' pair per line "
            + "as in Hugging Face's merges.txt (spaces as \u2581): the tokenizer becomes sub-word, each merge adding "
            + "its token after the character-level ones (default: none, character level).")
    Path merges;

    @Option(names = "--tie-embeddings", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Share the input embedding with the output head (default: ${DEFAULT-VALUE}).")
    boolean tie;

    @Option(names = "--dtype", defaultValue = "float32", description = "float32, bfloat16 or float16 (default: ${DEFAULT-VALUE}).")
    String dtype;

    @Option(names = "--seed", defaultValue = "0", description = "Seed of the weights; the same seed writes the same bytes (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--max-positions", defaultValue = "4096", description = "max_position_embeddings (default: ${DEFAULT-VALUE}).")
    int maxPositions;

    @Option(names = "--init-std", defaultValue = "0.02", description = "Standard deviation of the weights (default: ${DEFAULT-VALUE}).")
    double initStd;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "The folder to create.")
    Path out;

    @Option(names = "--force", description = "Replace DIR when it exists.")
    boolean force;

    @Override
    public Integer call() {
        if (hidden % heads != 0 && headDim == null) {
            throw new UserInputException("--hidden " + hidden + " is not a multiple of --heads " + heads + "; pass --head-dim");
        }
        int ffn = intermediate != null ? intermediate : (int) (Math.ceil(hidden * 8.0 / 3 / 32) * 32);
        List<CharTokenizerFiles.Merge> bpe = merges == null ? List.of() : CharTokenizerFiles.readMerges(merges);
        ModelInitializer.Spec model = new ModelInitializer.Spec(Architecture.fromModelType(like), hidden, layers, heads,
                kvHeads != null ? kvHeads : heads, headDim != null ? headDim : hidden / heads, ffn,
                vocab != null ? vocab : CharTokenizerFiles.vocabulary(bpe).size(), tie, dev.crucible.runner.session.ModelSession.parseDtype(dtype), seed,
                maxPositions, 1_000_000.0, initStd);
        ModelInitializer.write(model, bpe, out, force);
        PrintWriter stdout = spec.commandLine().getOut();
        long params = ModelInitializer.parameterCount(model);
        stdout.printf(Locale.ROOT, "wrote %s: %s, %,d parameters (%s), seed %d%n", out, like, params, model.dtype().userName(), seed);
        return 0;
    }
}
