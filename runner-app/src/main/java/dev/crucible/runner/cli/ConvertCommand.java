package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.Host;
import dev.crucible.runner.export.BaseFiles;
import dev.crucible.runner.export.gguf.GgufType;
import dev.crucible.runner.session.ModelSession;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "convert", mixinStandardHelpOptions = true,
        description = {"Convert a model folder to another format: a GGUF file that llama.cpp runs with nothing beside it "
                + "(llama.cpp's tensor names, the tokenizer and chat template in the metadata).",
                "Example: runner convert --model Qwen/Qwen2.5-0.5B-Instruct --to gguf --gguf-type q8_0 --out qwen.gguf"})
public final class ConvertCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Option(names = "--model", required = true, paramLabel = "M",
            description = "A model folder, or org/name[@revision] from the Hugging Face cache or hub.")
    String model;

    @Option(names = "--to", required = true, paramLabel = "FORMAT", description = "gguf")
    String to;

    @Option(names = "--gguf-type", defaultValue = "f16", paramLabel = "T",
            description = "f32, f16, bf16, q8_0, q4_0, q4_k_m or q6_k (default: ${DEFAULT-VALUE}).")
    String ggufType;

    @Option(names = "--out", required = true, paramLabel = "FILE", description = "The file to write.")
    Path out;

    @Option(names = "--force", description = "Replace FILE when it exists.")
    boolean force;

    ConvertCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        if (!to.equalsIgnoreCase("gguf")) {
            throw new UserInputException("--to '" + to + "' is not a format runner convert writes (gguf)");
        }
        GgufType type = GgufType.parse(ggufType, "--gguf-type");
        ModelLocator.Located located = ModelSession.locateModel(host, model);
        OutputLocation.checkNewFile(out, force, BaseFiles.of(located.folder()).weightBytes());
        new ExportGguf(type, spec.commandLine().getOut()).folder(located, out, force);
        return 0;
    }
}
