package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.LinearModule;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.runner.Host;
import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.export.BaseFiles;
import dev.crucible.runner.export.ExportWeights;
import dev.crucible.runner.export.ExportedModel;
import dev.crucible.runner.export.ModelCard;
import dev.crucible.runner.export.SafetensorsFolderWriter;
import dev.crucible.runner.export.gguf.GgufType;
import dev.crucible.runner.finetune.PeftAdapterReader;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.units.ByteSize;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "merge", mixinStandardHelpOptions = true,
        description = {"Merge a PEFT LoRA adapter (from runner finetune or Python PEFT) into its base model and write "
                + "the result as a Hugging Face model folder: W + scale*B*A for every adapted projection, every other "
                + "tensor copied, names, shapes and dtypes as in the base.",
                "Example: runner merge --model Qwen/Qwen2.5-0.5B-Instruct --adapter adapters/chat --out merged/chat"})
public final class MergeCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Mixin
    DeviceOptions deviceOptions;

    @Option(names = "--model", required = true, paramLabel = "M", description = "The base model the adapter was trained on.")
    String model;

    @Option(names = "--adapter", required = true, paramLabel = "DIR", description = "A PEFT adapter folder (adapter_config.json, adapter_model.safetensors).")
    Path adapter;

    @Option(names = "--out", required = true, paramLabel = "DIR2", description = "The merged model folder to write.")
    Path out;

    @Option(names = "--max-shard-size", defaultValue = "5GB", description = "Largest safetensors shard (default: ${DEFAULT-VALUE}).")
    String maxShardSize;

    @Option(names = "--export-gguf", paramLabel = "FILE", description = "Also write the merged model as a GGUF file for llama.cpp.")
    Path exportGguf;

    @Option(names = "--gguf-type", defaultValue = "f16", paramLabel = "T",
            description = "Type of --export-gguf's matrices: f32, f16, bf16, q8_0, q4_0, q4_k_m or q6_k (default: ${DEFAULT-VALUE}).")
    String ggufType;

    @Option(names = "--force", description = "Replace DIR2 (and FILE) when they exist.")
    boolean force;

    MergeCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        long maxShard = ByteSize.parse(maxShardSize, "--max-shard-size");
        // Refusals first, before the adapter is read or the model loads: the output location and the space the
        // merged folder needs, and the chat template that will be copied.
        ModelLocator.Located located = ModelSession.locateModel(host, model);
        BaseFiles base = BaseFiles.of(located.folder());
        base.checkChatTemplates();
        OutputLocation.checkNewFolder(out, force, base.exportBytes());
        GgufType gguf = GgufType.parse(ggufType, "--gguf-type");
        if (exportGguf != null) {
            OutputLocation.checkNewFile(exportGguf, force, base.weightBytes());
        }
        Map<String, LoraFactors> adapters = PeftAdapterReader.read(adapter);
        // Placed in float32 so the factors reach the merge unrounded; the merge itself starts from the stored weights.
        try (ModelSession session = deviceOptions.open(host, located, "float32", QuantizationConfig.NONE)) {
            Set<String> modules = session.model().linearModules().stream().map(LinearModule::name)
                    .collect(Collectors.toSet());
            for (Map.Entry<String, LoraFactors> entry : adapters.entrySet()) {
                if (!modules.contains(entry.getKey())) {
                    throw new UserInputException("the adapter targets " + entry.getKey() + ", which " + model
                            + " does not have; was it trained on another base model?");
                }
                try {
                    session.model().setAdapter(entry.getKey(), entry.getValue());
                } catch (IllegalArgumentException e) {
                    throw new UserInputException("the adapter does not fit " + model + ": " + e.getMessage());
                }
            }
            new SafetensorsFolderWriter(maxShard).write(new ExportedModel(located, session.config(), base,
                    Optional.of(ExportWeights.merged(session)), Optional.empty(),
                    Optional.of(modelCard(located, adapters.size())), folder -> { }), out, force);
            if (exportGguf != null) {
                new ExportGguf(gguf, spec.commandLine().getOut()).merged(session, ExportWeights.merged(session), exportGguf, force);
            }
        }
        spec.commandLine().getOut().println("merged " + adapters.size() + " adapted projections into " + out);
        return 0;
    }

    /** The merged folder's README.md: which adapter went into which base, and how. */
    private ModelCard modelCard(ModelLocator.Located base, int projections) {
        JsonNode config = PeftAdapterReader.config(adapter);
        Map<String, String> parameters = new LinkedHashMap<>();
        parameters.put("adapter", adapter.toAbsolutePath().normalize().toString());
        parameters.put("adapted projections", Integer.toString(projections));
        for (String key : List.of("r", "lora_alpha", "use_rslora", "target_modules", "base_model_name_or_path")) {
            JsonNode value = config.get(key);
            if (value != null && !value.isNull()) {
                parameters.put(key, value.isTextual() ? value.asText() : value.toString());
            }
        }
        String method = "A LoRA merge: every adapted projection's weight becomes W + scale·B·A (scale = lora_alpha / r, "
                + "or lora_alpha / √r with rsLoRA; rank_pattern and alpha_pattern as PEFT reads them), computed from the "
                + "stored weights and rounded once to their dtype; every other tensor is the base's, byte for byte.";
        return new ModelCard(base, "`" + base.reference() + "` with the LoRA adapter `"
                + adapter.getFileName() + "` merged into its weights by Crucible.", method, parameters, List.of(),
                ModelCard.commandLine("runner", spec.commandLine().getParseResult().originalArgs()), "",
                List.of("lora", "merged"));
    }
}
