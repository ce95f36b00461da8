package dev.crucible.runner.finetune;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.SafetensorsFile;
import dev.crucible.api.model.LoraFactors;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a PEFT LoRA adapter folder, ours or one saved by Python PEFT: {@code adapter_config.json} and
 * {@code adapter_model.safetensors} with keys {@code base_model.model.<module>.lora_A.weight} (or with the
 * adapter's name, {@code lora_A.default.weight}, as some versions save). Each module's scale is PEFT's:
 * {@code lora_alpha / r}, or {@code lora_alpha / sqrt(r)} with {@code use_rslora}, with per-module
 * {@code rank_pattern} / {@code alpha_pattern} overrides matched as PEFT matches them (the pattern is the end of
 * the module name, or a regular expression for it).
 */
public final class PeftAdapterReader {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String PREFIX = "base_model.model.";
    private static final Pattern KEY = Pattern.compile("(.+)\\.lora_([AB])(?:\\.[^.]+)?\\.weight");

    private PeftAdapterReader() {
    }

    /** The adapters by full module name, in the file's order, with their factors copied to the heap. */
    public static Map<String, LoraFactors> read(Path folder) {
        JsonNode config = config(folder);
        Path weights = folder.resolve("adapter_model.safetensors");
        if (!Files.isRegularFile(weights)) {
            boolean pickle = Files.isRegularFile(folder.resolve("adapter_model.bin"));
            throw new UserInputException(folder + " has no adapter_model.safetensors"
                    + (pickle ? " (adapter_model.bin is a pickle, which Crucible does not load; re-save it with "
                    + "safe_serialization=True)" : "; point --adapter at a PEFT adapter folder"));
        }
        int rank = config.path("r").asInt(8);
        double alpha = config.path("lora_alpha").asDouble(8);
        boolean rslora = config.path("use_rslora").asBoolean(false);
        Map<String, HostTensor> a = new LinkedHashMap<>();
        Map<String, HostTensor> b = new LinkedHashMap<>();
        try (SafetensorsFile file = SafetensorsFile.open(weights)) {
            for (String key : file.tensors().keySet()) {
                String name = key.startsWith(PREFIX) ? key.substring(PREFIX.length()) : key;
                Matcher matcher = KEY.matcher(name);
                if (!matcher.matches()) {
                    throw new UserInputException(weights.getFileName() + " holds " + key
                            + ", which is not a LoRA A or B weight of a linear layer (embedding adapters, DoRA "
                            + "magnitudes and modules_to_save are not supported)");
                }
                HostTensor stored = file.tensor(key);
                HostTensor copy = new HostTensor(key, stored.dtype(), stored.shape(),
                        MemorySegment.ofArray(stored.toByteArray()));
                (matcher.group(2).equals("A") ? a : b).put(matcher.group(1), copy);
            }
        }
        Map<String, LoraFactors> adapters = new LinkedHashMap<>();
        for (Map.Entry<String, HostTensor> entry : a.entrySet()) {
            String module = entry.getKey();
            HostTensor up = b.get(module);
            if (up == null) {
                throw new UserInputException(weights.getFileName() + " has lora_A but no lora_B for " + module);
            }
            int moduleRank = pattern(config.path("rank_pattern"), module).map(JsonNode::asInt).orElse(rank);
            double moduleAlpha = pattern(config.path("alpha_pattern"), module).map(JsonNode::asDouble).orElse(alpha);
            long storedRank = entry.getValue().shape()[0];
            if (storedRank != moduleRank) {
                throw new UserInputException(module + ": lora_A has rank " + storedRank + " but adapter_config.json "
                        + "says r = " + moduleRank);
            }
            double scale = rslora ? moduleAlpha / Math.sqrt(moduleRank) : moduleAlpha / moduleRank;
            adapters.put(module, new LoraFactors(entry.getValue(), up, scale));
        }
        b.keySet().stream().filter(module -> !a.containsKey(module)).findFirst().ifPresent(module -> {
            throw new UserInputException(weights.getFileName() + " has lora_B but no lora_A for " + module);
        });
        if (adapters.isEmpty()) {
            throw new UserInputException(weights + " holds no LoRA weights");
        }
        return adapters;
    }

    /** The adapter's {@code adapter_config.json}, checked to be a LoRA adapter Crucible can merge. */
    public static JsonNode config(Path folder) {
        Path file = folder.resolve("adapter_config.json");
        if (!Files.isRegularFile(file)) {
            throw new UserInputException(folder + " has no adapter_config.json; point --adapter at a PEFT adapter folder");
        }
        JsonNode config;
        try {
            config = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UserInputException(file + " is not valid JSON: " + e.getMessage().lines().findFirst().orElse(""));
        }
        String type = config.path("peft_type").asText("LORA");
        if (!type.equalsIgnoreCase("LORA")) {
            throw new UserInputException(file + ": peft_type " + type + " is not supported; only LoRA adapters merge");
        }
        if (config.path("use_dora").asBoolean(false)) {
            throw new UserInputException(file + ": DoRA adapters (use_dora) are not supported");
        }
        if (config.path("fan_in_fan_out").asBoolean(false)) {
            throw new UserInputException(file + ": fan_in_fan_out adapters (GPT-2 style Conv1D) are not supported");
        }
        return config;
    }

    /** The value of the first pattern (in name order, as PEFT's sorted lookup) that names {@code module}. */
    private static Optional<JsonNode> pattern(JsonNode patterns, String module) {
        if (!patterns.isObject()) {
            return Optional.empty();
        }
        Map<String, JsonNode> sorted = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = patterns.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            sorted.put(entry.getKey(), entry.getValue());
        }
        for (Map.Entry<String, JsonNode> entry : sorted.entrySet()) {
            String key = entry.getKey();
            if (module.equals(key) || module.endsWith("." + key) || matchesRegex(key, module)) {
                return Optional.of(entry.getValue());
            }
        }
        return Optional.empty();
    }

    private static boolean matchesRegex(String pattern, String module) {
        try {
            return Pattern.compile("(.*\\.)?(" + pattern + ")").matcher(module).matches();
        } catch (java.util.regex.PatternSyntaxException e) {
            return false;
        }
    }
}
