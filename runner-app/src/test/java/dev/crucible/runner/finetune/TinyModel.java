package dev.crucible.runner.finetune;

import dev.crucible.api.model.Architecture;
import dev.crucible.api.tensor.DType;
import dev.crucible.runner.model.CharTokenizerFiles;
import dev.crucible.runner.model.ModelInitializer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Small init-model folders (character tokenizer, ChatML template) and chat data for end-to-end tests. */
final class TinyModel {
    private TinyModel() {
    }

    static Path write(Path folder, DType dtype) {
        ModelInitializer.write(new ModelInitializer.Spec(Architecture.LLAMA, 32, 2, 4, 2, 8, 64,
                CharTokenizerFiles.vocabulary().size(), true, dtype, 5, 512, 10000.0, 0.02), folder, false);
        return folder;
    }

    /** A dozen short conversations in the messages format: a pattern a tiny model learns in a few steps. */
    static Path chatData(Path file, int rows) {
        List<String> lines = new ArrayList<>();
        String[] colours = {"red", "blue", "green", "black"};
        for (int i = 0; i < rows; i++) {
            String colour = colours[i % colours.length];
            lines.add("{\"messages\": [{\"role\": \"user\", \"content\": \"Colour " + i + "?\"}, "
                    + "{\"role\": \"assistant\", \"content\": \"It is " + colour + ".\"}], \"id\": " + i + "}");
        }
        try {
            return Files.write(file, lines);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
