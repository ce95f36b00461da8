package dev.crucible.runner.cli;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.export.BaseFiles;
import dev.crucible.runner.export.ExportWeights;
import dev.crucible.runner.export.ExportedModel;
import dev.crucible.runner.export.gguf.GgufType;
import dev.crucible.runner.export.gguf.GgufWriter;
import dev.crucible.runner.session.ModelSession;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * {@code --export-gguf FILE [--gguf-type T]} of the commands that export a model, and {@code runner convert}: a GGUF
 * file of a model folder as it is, or of a session's model with its adapters merged, and the line that says so.
 */
record ExportGguf(GgufType type, PrintWriter out) {

    /** The model in {@code located}'s folder (a quantized one dequantized), as it is. */
    void folder(ModelLocator.Located located, Path file, boolean force) {
        BaseFiles base = BaseFiles.of(located.folder());
        ModelConfig config = ModelConfig.read(located.folder());
        try (Checkpoint checkpoint = Checkpoint.open(located.folder())) {
            write(new ExportedModel(located, config, base,
                    Optional.of(ExportWeights.replacing(checkpoint, config.layout(), Map.of())), Optional.empty(), Optional.empty(),
                    folder -> { }), file, force);
        }
    }

    /** The session's model with {@code weights} (its adapters merged, {@link ExportWeights#merged} or {@code merging}). */
    void merged(ModelSession session, ExportWeights weights, Path file, boolean force) {
        write(new ExportedModel(session.location(), session.config(), BaseFiles.of(session.modelDir()),
                Optional.of(weights), Optional.empty(), Optional.empty(), folder -> { }), file, force);
    }

    void write(ExportedModel model, Path file, boolean force) {
        new GgufWriter(type, (bytes, types) -> out.println("wrote " + file + " (GGUF " + type.userName() + ", "
                + OutputLocation.bytes(bytes) + "; tensors: " + types + ")")).write(model, file, force);
    }
}
