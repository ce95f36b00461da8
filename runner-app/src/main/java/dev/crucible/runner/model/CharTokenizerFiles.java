package dev.crucible.runner.model;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The tokenizer files of a model made by {@code runner init-model}: a character-level Hugging Face fast
 * tokenizer (BPE with no merges, printable ASCII as single tokens, everything else through byte fallback), so
 * any text round-trips and the files load in transformers and in Crucible alike. Chat turns use ChatML
 * ({@code <|im_start|>role\n...<|im_end|>\n}), whose markers are single special tokens.
 */
public final class CharTokenizerFiles {
    public static final String UNK = "<unk>";
    public static final String BOS = "<s>";
    public static final String EOS = "</s>";
    public static final String IM_START = "<|im_start|>";
    public static final String IM_END = "<|im_end|>";
    private static final List<String> SPECIAL = List.of(UNK, BOS, EOS, IM_START, IM_END);
    /** Hugging Face's SentencePiece-style space marker. */
    private static final String SPACE = "\u2581";

    /** ChatML; a system turn is optional. Written for Crucible's and transformers' Jinja alike. */
    public static final String CHAT_TEMPLATE = "{%- for message in messages %}"
            + "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
            + "{%- endfor %}"
            + "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

    private CharTokenizerFiles() {
    }

    /** Every token in id order: specials, the 256 byte-fallback tokens, then the space marker and printable ASCII. */
    public static List<String> vocabulary() {
        List<String> vocab = new ArrayList<>(SPECIAL);
        for (int b = 0; b < 256; b++) {
            vocab.add(String.format(Locale.ROOT, "<0x%02X>", b));
        }
        vocab.add(SPACE);
        for (char c = 33; c < 127; c++) {
            vocab.add(String.valueOf(c));
        }
        return vocab;
    }

    public static int idOf(String token) {
        int id = vocabulary().indexOf(token);
        if (id < 0) {
            throw new IllegalArgumentException("no token " + token);
        }
        return id;
    }

    /** tokenizer.json as a JSON tree (Jackson serializes maps in insertion order). */
    public static Map<String, Object> tokenizerJson() {
        List<String> vocabulary = vocabulary();
        List<Map<String, Object>> added = new ArrayList<>();
        for (int id = 0; id < SPECIAL.size(); id++) {
            Map<String, Object> token = new LinkedHashMap<>();
            token.put("id", id);
            token.put("content", SPECIAL.get(id));
            token.put("single_word", false);
            token.put("lstrip", false);
            token.put("rstrip", false);
            token.put("normalized", false);
            token.put("special", true);
            added.add(token);
        }
        Map<String, Integer> vocab = new LinkedHashMap<>();
        for (int id = 0; id < vocabulary.size(); id++) {
            vocab.put(vocabulary.get(id), id);
        }
        Map<String, Object> model = new LinkedHashMap<>();
        model.put("type", "BPE");
        model.put("dropout", null);
        model.put("unk_token", UNK);
        model.put("continuing_subword_prefix", null);
        model.put("end_of_word_suffix", null);
        model.put("fuse_unk", true);
        model.put("byte_fallback", true);
        model.put("ignore_merges", false);
        model.put("vocab", vocab);
        model.put("merges", List.of());

        Map<String, Object> json = new LinkedHashMap<>();
        json.put("version", "1.0");
        json.put("truncation", null);
        json.put("padding", null);
        json.put("added_tokens", added);
        json.put("normalizer", ordered("type", "Replace", "pattern", Map.of("String", " "), "content", SPACE));
        json.put("pre_tokenizer", null);
        json.put("post_processor", null);
        json.put("decoder", ordered("type", "Sequence", "decoders", List.of(
                ordered("type", "Replace", "pattern", Map.of("String", SPACE), "content", " "),
                Map.of("type", "ByteFallback"),
                Map.of("type", "Fuse"))));
        json.put("model", model);
        return json;
    }

    /**
     * A map that keeps the order its keys are given in. {@code Map.of} iterates in an order that changes from one
     * JVM run to the next, which made tokenizer.json differ between two runs of init-model.
     */
    private static Map<String, Object> ordered(Object... keysAndValues) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return map;
    }

    /** tokenizer_config.json: no BOS is added (like Qwen), eos ends a chat turn, pad falls back to eos. */
    public static Map<String, Object> tokenizerConfig() {
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("tokenizer_class", "PreTrainedTokenizerFast");
        config.put("add_bos_token", false);
        config.put("add_eos_token", false);
        config.put("bos_token", BOS);
        config.put("eos_token", IM_END);
        config.put("unk_token", UNK);
        config.put("pad_token", null);
        config.put("clean_up_tokenization_spaces", false);
        config.put("model_max_length", 4096);
        config.put("chat_template", CHAT_TEMPLATE);
        return config;
    }
}
