package dev.crucible.runner.export;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.HostTensor;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.StagedFolder;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.runner.session.ModelSession;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Writes the session's model, with its current adapters merged, as a Hugging Face folder: the same tensor names,
 * shapes and dtypes as the base (edited weights replaced by their merged values, every other tensor copied
 * byte for byte), safetensors shards no larger than {@code maxShardBytes}, and every non-weight file of the base
 * folder (config, generation config, tokenizer files, chat template). The folder appears whole or not at all.
 */
public final class ModelExporter {
    private ModelExporter() {
    }

    /**
     * @param extraFiles written into the folder before it is moved into place (e.g. reproduce.json), given the
     *                   staging folder with the weights and copied files already there
     */
    public static void exportMerged(ModelSession session, Path out, long maxShardBytes, boolean force, Consumer<Path> extraFiles) {
        try (StagedFolder staged = StagedFolder.begin(out, force);
             MergedWeights merged = session.backend().merge(session.model(), session.checkpoint())) {
            Checkpoint base = session.checkpoint();
            Map<String, HostTensor> replaced = merged.tensors();
            List<WritableTensor> tensors = new ArrayList<>();
            for (String name : base.names()) {
                HostTensor tensor = replaced.containsKey(name) ? replaced.get(name) : base.tensor(name);
                tensors.add(WritableTensor.of(tensor));
            }
            SafetensorsWriter.writeModel(staged.path(), tensors, Map.of("format", "pt"), maxShardBytes);
            copyNonWeightFiles(session.modelDir(), staged.path());
            extraFiles.accept(staged.path());
            staged.commit();
        }
    }

    /** Everything in the base folder except weights, pickles and sub-folders. */
    public static void copyNonWeightFiles(Path from, Path to) {
        try (var files = Files.list(from)) {
            for (Path file : files.sorted().toList()) {
                String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
                boolean weights = name.endsWith(".safetensors") || name.equals("model.safetensors.index.json")
                        || name.endsWith(".bin") || name.endsWith(".pt") || name.endsWith(".pth") || name.endsWith(".ckpt")
                        || name.endsWith(".gguf") || name.startsWith(".");
                if (!weights && Files.isRegularFile(file)) {
                    Files.copy(file, to.resolve(file.getFileName()));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy the model's files from " + from, e);
        }
    }

    /** Parses sizes the way transformers' {@code max_shard_size} does: "5GB", "500MB", "2GiB", or bytes. */
    public static long parseSize(String text) {
        String s = text.trim().toUpperCase(Locale.ROOT);
        String[][] units = {{"GIB", "1073741824"}, {"MIB", "1048576"}, {"KIB", "1024"}, {"GB", "1000000000"},
            {"MB", "1000000"}, {"KB", "1000"}, {"B", "1"}};
        for (String[] unit : units) {
            if (s.endsWith(unit[0])) {
                String number = s.substring(0, s.length() - unit[0].length()).trim();
                try {
                    double value = Double.parseDouble(number);
                    long bytes = (long) (value * Long.parseLong(unit[1]));
                    if (bytes > 0) {
                        return bytes;
                    }
                } catch (NumberFormatException e) {
                    break;
                }
            }
        }
        try {
            long bytes = Long.parseLong(s);
            if (bytes > 0) {
                return bytes;
            }
        } catch (NumberFormatException ignored) {
            // fall through to the error
        }
        throw new dev.crucible.api.UserInputException("size '" + text + "' is not understood; write e.g. 5GB, 500MB or a byte count");
    }
}
