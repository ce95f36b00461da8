package dev.crucible.runner.finetune;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.train.TrainerState;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.export.BaseFiles;
import dev.crucible.runner.export.ExportWeights;
import dev.crucible.runner.export.ExportedModel;
import dev.crucible.runner.export.LoraAdapters;
import dev.crucible.runner.export.PeftAdapterWriter;
import dev.crucible.runner.export.SafetensorsFolderWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What {@code runner finetune} leaves in {@code --out}, written whole or not at all:
 * <ul>
 *   <li>LoRA/QLoRA: {@code adapter_model.safetensors} and {@code adapter_config.json} in PEFT's layout
 *       ({@link PeftAdapterWriter}), the tokenizer files of the base model, {@code finetune_meta.json};</li>
 *   <li>full: a Hugging Face model folder (every tensor under its base name, shape and stored dtype; the base's
 *       config, generation config and tokenizer files) plus {@code finetune_meta.json};</li>
 *   <li>a run stopped early also leaves {@code trainer_state.safetensors}, which {@code --resume} continues from.</li>
 * </ul>
 */
public final class FinetuneOutput {
    public static final String META_FILE = "finetune_meta.json";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final List<String> TOKENIZER_FILES = List.of("tokenizer.json", "tokenizer_config.json",
            "special_tokens_map.json", "chat_template.jinja", "tokenizer.model", "vocab.json", "merges.txt",
            "added_tokens.json");
    private static final long MAX_SHARD_BYTES = 5_000_000_000L;

    private FinetuneOutput() {
    }

    /** A PEFT adapter folder, with the base's tokenizer files beside it. */
    public static void writeAdapter(Path out, boolean force, ModelLocator.Located base, ModelConfig config,
                                    LoraAdapters adapters, Map<String, Object> meta, Optional<StateToSave> state) {
        new PeftAdapterWriter().write(new ExportedModel(base, config, BaseFiles.of(base.folder()), Optional.empty(),
                Optional.of(adapters), Optional.empty(), folder -> {
                    copyTokenizerFiles(base.folder(), folder);
                    writeMetaAndState(folder, meta, state);
                }), out, force);
    }

    /** A full model folder: {@code trained} replaces the base's tensors of the same name. */
    public static void writeModel(Path out, boolean force, ModelLocator.Located base, ModelConfig config,
                                  Checkpoint checkpoint, Map<String, HostTensor> trained, Map<String, Object> meta,
                                  Optional<StateToSave> state) {
        new SafetensorsFolderWriter(MAX_SHARD_BYTES).write(new ExportedModel(base, config, BaseFiles.of(base.folder()),
                Optional.of(ExportWeights.replacing(checkpoint, config.layout(), trained)), Optional.empty(), Optional.empty(),
                folder -> writeMetaAndState(folder, meta, state)), out, force);
    }

    /** A stopped run's state and the fingerprint that ties it to its settings and data. */
    public record StateToSave(TrainerState state, String fingerprint) {
    }

    private static void writeMetaAndState(Path folder, Map<String, Object> meta, Optional<StateToSave> state) throws IOException {
        JSON.writeValue(folder.resolve(META_FILE).toFile(), meta);
        state.ifPresent(saved -> TrainerStateFile.write(folder, saved.state(), saved.fingerprint()));
    }

    static void copyTokenizerFiles(Path from, Path to) throws IOException {
        for (String name : TOKENIZER_FILES) {
            Path file = from.resolve(name);
            if (Files.isRegularFile(file)) {
                Files.copy(file, to.resolve(name));
            }
        }
    }

    /** A previous run's finetune_meta.json in {@code folder}, for a resumed run's loss history. */
    @SuppressWarnings("unchecked")
    public static Optional<Map<String, Object>> readMeta(Path folder) {
        Path file = folder.resolve(META_FILE);
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        try {
            return Optional.of(JSON.readValue(file.toFile(), Map.class));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /**
     * What {@link #writeAdapter} will write, known before training: float32 A and B of every adapted projection and
     * the files beside them, the tokenizer's counted at their size (a tokenizer.json can take 10 MB).
     */
    public static long adapterBytes(ModelLayout layout, List<String> modules, int rank, Path baseModel) {
        long tensors = 0;
        for (String module : modules) {
            tensors += layout.linear(module).map(linear -> (long) Float.BYTES * rank * (linear.in() + linear.out()))
                    .orElse(0L);
        }
        long tokenizer = 0;
        for (String name : TOKENIZER_FILES) {
            Path file = baseModel.resolve(name);
            try {
                tokenizer += Files.isRegularFile(file) ? Files.size(file) : 0;
            } catch (IOException e) {
                throw new UserInputException("cannot read " + file + ": " + e.getMessage(), e);
            }
        }
        return PeftAdapterWriter.folderBytes(tensors) + tokenizer;
    }
}
