package dev.crucible.runner.export;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.quant.CompressedTensors;
import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.huggingface.template.ChatTemplate;
import dev.crucible.huggingface.template.ChatTemplateException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The files of a base model folder that a model made from it (an export, a merge, a full fine-tune) carries:
 * those that describe the model — config, generation config, tokenizer, chat template — and its licence terms.
 * Files that describe the base's outputs (its README with the base's scores and hashes, goldens, evaluation
 * results) would be false for the new model and are left behind; the export's own model card lists them.
 * Weights are never copied: the writer writes its own.
 */
public record BaseFiles(Path folder, List<Path> copied, List<String> dropped, long weightBytes, int tensors) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** What describes the model itself and is read by transformers or tokenizers when the folder is loaded. */
    private static final Pattern MODEL_FILE = Pattern.compile("config\\.json|generation_config\\.json|tokenizer.*"
            + "|special_tokens_map\\.json|added_tokens\\.json|chat_template\\.(jinja|json)|vocab\\..+|merges\\.txt"
            + "|.+\\.model|.+\\.tiktoken|.*processor_config\\.json");

    /** Licence terms travel with every derivative: Apache's NOTICE, Llama's USE_POLICY, plain LICENSE files. */
    private static final Pattern LICENCE_FILE = Pattern.compile(
            "(licen[cs]e|copying|copyright|notice|.*use_policy|terms_of_use|responsible_use_guide)([._ -].*)?",
            Pattern.CASE_INSENSITIVE);

    private static final Pattern WEIGHTS = Pattern.compile(".+\\.safetensors|model\\.safetensors\\.index\\.json");

    /** Room for the files an export adds (model card, reproduce.json) ... */
    private static final long ADDED_FILES_BYTES = 64 << 10;
    /** ... and per tensor, its entry in the safetensors header, the shard index and the card's tables. */
    private static final long BYTES_PER_TENSOR = 256;

    public BaseFiles {
        copied = List.copyOf(copied);
        dropped = List.copyOf(dropped);
    }

    /** Sorts the files of {@code modelDir} (opening its weights' headers, not their data, for their size). */
    public static BaseFiles of(Path modelDir) {
        List<Path> copied = new ArrayList<>();
        List<String> dropped = new ArrayList<>();
        try (Stream<Path> files = Files.list(modelDir)) {
            for (Path file : files.sorted().toList()) {
                String name = file.getFileName().toString();
                if (name.startsWith(".") || WEIGHTS.matcher(name).matches()) {
                    continue;
                }
                if (Files.isRegularFile(file) && (MODEL_FILE.matcher(name).matches() || isLicence(name))) {
                    copied.add(file);
                } else {
                    dropped.add(Files.isDirectory(file) ? name + "/" : name);
                }
            }
        } catch (IOException e) {
            throw new UserInputException("cannot read the model folder " + modelDir + ": " + e.getMessage(), e);
        }
        long weights = 0;
        int tensors;
        try (Checkpoint checkpoint = Checkpoint.open(modelDir)) {
            for (String name : checkpoint.names()) {
                weights += checkpoint.info(name).byteLength();
            }
            tensors = checkpoint.names().size();
        }
        return new BaseFiles(modelDir, copied, dropped, weights, tensors);
    }

    static boolean isLicence(String name) {
        return LICENCE_FILE.matcher(name).matches();
    }

    /** What a folder with the base's tensors, these files and an export's own additions takes on disk. */
    public long exportBytes() {
        long total = weightBytes + ADDED_FILES_BYTES + BYTES_PER_TENSOR * tensors;
        for (Path file : copied) {
            try {
                total += Files.size(file);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return total;
    }

    /**
     * Compiles every chat template among the copied files, so that a template with a syntax error is found where
     * it is copied, before any weights are written, and not by whoever loads the export.
     */
    public void checkChatTemplates() {
        for (Path file : copied) {
            String name = file.getFileName().toString();
            if (name.equals("chat_template.jinja")) {
                compile(file, "", read(file));
            } else if (name.equals("chat_template.json") || name.equals("tokenizer_config.json")) {
                JsonNode template = readJson(file).get("chat_template");
                if (template != null && template.isTextual()) {
                    compile(file, "", template.asText());
                } else if (template != null && template.isArray()) {
                    for (JsonNode named : template) {
                        compile(file, " ('" + named.path("name").asText() + "')", named.path("template").asText());
                    }
                }
            }
        }
    }

    /**
     * Copies the files into {@code folder}. A config.json that says the weights are stored quantized
     * (compressed-tensors) loses its {@code quantization_config}: every writer stores the weights dense.
     */
    public void copyInto(Path folder) throws IOException {
        for (Path file : copied) {
            Path target = folder.resolve(file.getFileName());
            if (file.getFileName().toString().equals("config.json")
                    && readJson(file).path("quantization_config").path("quant_method").asText("")
                    .equals(CompressedTensors.QUANT_METHOD)) {
                ObjectNode config = (ObjectNode) readJson(file);
                config.remove("quantization_config");
                Files.writeString(target, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(config) + "\n");
            } else {
                Files.copy(file, target);
            }
        }
    }

    /** The base's licence as its model card's YAML front matter states it (license, license_name, license_link). */
    public Map<String, String> licenceMetadata() {
        Path readme = folder.resolve("README.md");
        if (!Files.isRegularFile(readme)) {
            return Map.of();
        }
        return ModelCard.frontMatter(read(readme), List.of("license", "license_name", "license_link"));
    }

    private static void compile(Path file, String which, String source) {
        try {
            ChatTemplate.compile(source);
        } catch (ChatTemplateException e) {
            throw new UserInputException("the chat template in " + file + which + " does not compile (" + e.getMessage()
                    + "); fix it in the base model before exporting, nothing was written");
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UserInputException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    private static JsonNode readJson(Path file) {
        try {
            JsonNode node = JSON.readTree(file.toFile());
            return node == null ? JSON.createObjectNode() : node;
        } catch (IOException e) {
            throw new UserInputException("cannot read " + file + ": " + e.getMessage().lines().findFirst().orElse(""), e);
        }
    }
}
