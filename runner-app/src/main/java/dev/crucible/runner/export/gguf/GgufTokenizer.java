package dev.crucible.runner.export.gguf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.model.ModelConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * The tokenizer as GGUF metadata, from the folder's tokenizer.json, tokenizer_config.json and chat template, so that
 * llama.cpp needs nothing else: {@code tokenizer.ggml.model} {@code llama} (SentencePiece-style BPE with byte
 * fallback and {@code ▁} for spaces: tokens, scores, token types) or {@code gpt2} (byte-level BPE: tokens, merges,
 * token types, the pre-tokenizer llama.cpp names for the family), the BOS/EOS/padding/unknown ids, whether BOS is
 * added, and the chat template.
 */
final class GgufTokenizer {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern BYTE_TOKEN = Pattern.compile("<0x[0-9A-Fa-f]{2}>");

    /** llama.cpp's {@code llama_token_type}. */
    private static final int NORMAL = 1;
    private static final int UNKNOWN = 2;
    private static final int CONTROL = 3;
    private static final int USER_DEFINED = 4;
    private static final int UNUSED = 5;
    private static final int BYTE = 6;

    private GgufTokenizer() {
    }

    static void write(GgufFile file, Path folder, ModelConfig config) {
        JsonNode tokenizer = read(folder.resolve("tokenizer.json"), true);
        JsonNode tokenizerConfig = read(folder.resolve("tokenizer_config.json"), false);
        JsonNode model = tokenizer.path("model");
        if (!model.path("type").asText().equals("BPE")) {
            throw new UserInputException(folder.resolve("tokenizer.json") + ": a " + model.path("type").asText("?")
                    + " tokenizer cannot be written to GGUF yet (BPE tokenizers can)");
        }
        boolean byteLevel = tokenizer.toString().contains("\"ByteLevel\"");
        Map<Integer, String> byId = new HashMap<>();
        model.path("vocab").properties().forEach(entry -> byId.put(entry.getValue().asInt(), entry.getKey()));
        Map<Integer, Boolean> added = new HashMap<>();
        for (JsonNode token : tokenizer.path("added_tokens")) {
            byId.put(token.path("id").asInt(), token.path("content").asText());
            added.put(token.path("id").asInt(), token.path("special").asBoolean(false));
        }
        int size = Math.max(config.vocabSize(), byId.keySet().stream().mapToInt(i -> i + 1).max().orElse(0));
        List<String> merges = new ArrayList<>();
        for (JsonNode merge : model.path("merges")) {
            merges.add(merge.isArray() ? merge.get(0).asText() + " " + merge.get(1).asText() : merge.asText());
        }
        Map<String, Integer> mergeRank = new HashMap<>();
        for (int rank = 0; rank < merges.size(); rank++) {
            mergeRank.putIfAbsent(merges.get(rank).replace(" ", ""), rank);
        }
        String unk = model.path("unk_token").asText("");
        List<String> tokens = new ArrayList<>(size);
        int[] types = new int[size];
        float[] scores = new float[size];
        for (int id = 0; id < size; id++) {
            String token = byId.get(id);
            if (token == null) {
                tokens.add("[PAD" + id + "]");
                types[id] = UNUSED;
                scores[id] = -1e9f;
                continue;
            }
            tokens.add(token);
            types[id] = added.containsKey(id) ? (added.get(id) ? CONTROL : USER_DEFINED)
                    : token.equals(unk) ? UNKNOWN
                    : !byteLevel && BYTE_TOKEN.matcher(token).matches() ? BYTE : NORMAL;
            if (token.equals(unk)) {
                types[id] = UNKNOWN;
            }
            // SentencePiece merges the highest-scoring pair first: a merge's rank is its priority.
            Integer rank = mergeRank.get(token);
            scores[id] = rank != null ? -rank : -(merges.size() + id);
        }
        if (byteLevel) {
            file.put("tokenizer.ggml.model", new GgufFile.Value.Str("gpt2"));
            file.put("tokenizer.ggml.pre", new GgufFile.Value.Str(switch (config.architecture()) {
                case QWEN2, QWEN3, QWEN3_MOE -> "qwen2";
                case LLAMA -> "llama-bpe";
                default -> "default";
            }));
            file.put("tokenizer.ggml.tokens", new GgufFile.Value.Strings(tokens));
            file.put("tokenizer.ggml.token_type", new GgufFile.Value.I32s(types));
            file.put("tokenizer.ggml.merges", new GgufFile.Value.Strings(merges));
        } else {
            file.put("tokenizer.ggml.model", new GgufFile.Value.Str("llama"));
            file.put("tokenizer.ggml.tokens", new GgufFile.Value.Strings(tokens));
            file.put("tokenizer.ggml.scores", new GgufFile.Value.F32s(scores));
            file.put("tokenizer.ggml.token_type", new GgufFile.Value.I32s(types));
            file.put("tokenizer.ggml.add_space_prefix",
                    new GgufFile.Value.Bool(tokenizer.path("normalizer").toString().contains("\"Prepend\"")));
        }
        Map<String, Integer> idOf = new HashMap<>();
        for (int id = 0; id < tokens.size(); id++) {
            idOf.putIfAbsent(tokens.get(id), id);
        }
        OptionalInt bos = special(tokenizerConfig, "bos_token", idOf, config.bosTokenId());
        OptionalInt eos = special(tokenizerConfig, "eos_token", idOf,
                config.eosTokenIds().isEmpty() ? OptionalInt.empty() : OptionalInt.of(config.eosTokenIds().getFirst()));
        OptionalInt pad = special(tokenizerConfig, "pad_token", idOf, config.padTokenId());
        bos.ifPresent(id -> file.put("tokenizer.ggml.bos_token_id", new GgufFile.Value.U32(id)));
        eos.ifPresent(id -> file.put("tokenizer.ggml.eos_token_id", new GgufFile.Value.U32(id)));
        pad.ifPresent(id -> file.put("tokenizer.ggml.padding_token_id", new GgufFile.Value.U32(id)));
        if (idOf.containsKey(unk)) {
            file.put("tokenizer.ggml.unknown_token_id", new GgufFile.Value.U32(idOf.get(unk)));
        }
        file.put("tokenizer.ggml.add_bos_token", new GgufFile.Value.Bool(addsBos(tokenizer, tokenizerConfig)));
        file.put("tokenizer.ggml.add_eos_token",
                new GgufFile.Value.Bool(tokenizerConfig.path("add_eos_token").asBoolean(false)));
        chatTemplate(folder, tokenizerConfig).ifPresent(template ->
                file.put("tokenizer.chat_template", new GgufFile.Value.Str(template)));
    }

    /** tokenizer.json's post-processor prepends a special token to a single sequence, or tokenizer_config says so. */
    private static boolean addsBos(JsonNode tokenizer, JsonNode tokenizerConfig) {
        JsonNode single = tokenizer.path("post_processor").path("single");
        if (single.isArray() && !single.isEmpty()) {
            return single.get(0).has("SpecialToken");
        }
        return tokenizerConfig.path("add_bos_token").asBoolean(false);
    }

    private static OptionalInt special(JsonNode tokenizerConfig, String key, Map<String, Integer> idOf,
                                       OptionalInt fallback) {
        JsonNode value = tokenizerConfig.path(key);
        String content = value.isTextual() ? value.asText() : value.path("content").asText(null);
        if (content != null && idOf.containsKey(content)) {
            return OptionalInt.of(idOf.get(content));
        }
        return fallback;
    }

    private static java.util.Optional<String> chatTemplate(Path folder, JsonNode tokenizerConfig) {
        Path jinja = folder.resolve("chat_template.jinja");
        if (Files.isRegularFile(jinja)) {
            try {
                return java.util.Optional.of(Files.readString(jinja));
            } catch (IOException e) {
                throw new UserInputException("cannot read " + jinja + ": " + e.getMessage(), e);
            }
        }
        JsonNode template = tokenizerConfig.path("chat_template");
        if (template.isTextual()) {
            return java.util.Optional.of(template.asText());
        }
        for (JsonNode named : template) {
            if (named.path("name").asText().equals("default")) {
                return java.util.Optional.of(named.path("template").asText());
            }
        }
        return java.util.Optional.empty();
    }

    private static JsonNode read(Path file, boolean required) {
        if (!Files.isRegularFile(file)) {
            if (required) {
                throw new UserInputException(file + " is missing; a GGUF file carries the tokenizer");
            }
            return JSON.createObjectNode();
        }
        try {
            return JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UserInputException("cannot read " + file + ": " + e.getMessage().lines().findFirst().orElse(""), e);
        }
    }
}
