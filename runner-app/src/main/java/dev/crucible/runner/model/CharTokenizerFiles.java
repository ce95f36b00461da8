package dev.crucible.runner.model;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The tokenizer files of a model made by {@code runner init-model}: a character-level Hugging Face fast
 * tokenizer (BPE with no merges, printable ASCII as single tokens, everything else through byte fallback), so
 * any text round-trips and the files load in transformers and in Crucible alike. Chat turns use ChatML
 * ({@code <|im_start|>role\n...<|im_end|>\n}), whose markers are single special tokens.
 *
 * <p>Given byte-pair merges (learned on one's own data, as {@code scripts/GenerateDemoData.java} does for the demo
 * model), the same tokenizer becomes sub-word: each merge adds its token after the character-level ones, so the
 * special tokens keep their ids. There is no pre-tokenizer, so the merges apply to a whole text; merges that
 * join letters within a word only (as Hugging Face's word-level BPE training makes) never cross a space.
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

    /** One byte-pair merge: two tokens that become their concatenation. */
    public record Merge(String left, String right) {
        public String merged() {
            return left + right;
        }
    }

    /** The character-level vocabulary followed by the tokens the merges make, each once, in merge order. */
    public static List<String> vocabulary(List<Merge> merges) {
        Set<String> vocab = new LinkedHashSet<>(vocabulary());
        for (Merge merge : merges) {
            vocab.add(merge.merged());
        }
        return new ArrayList<>(vocab);
    }

    /**
     * Reads merges in Hugging Face's {@code merges.txt} form: one {@code left right} pair per line, spaces written
     * as the marker {@code \u2581}, an optional {@code #version} first line. Each side must be a token already (a
     * character of the vocabulary or the result of an earlier merge); anything else is a one-line error naming
     * the line.
     */
    public static List<Merge> readMerges(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UserInputException("cannot read --merges " + file + ": " + e.getMessage(), e);
        }
        Set<String> known = new LinkedHashSet<>(vocabulary());
        List<Merge> merges = new ArrayList<>();
        for (int n = 0; n < lines.size(); n++) {
            String line = lines.get(n);
            if (line.isBlank() || (n == 0 && line.startsWith("#version"))) {
                continue;
            }
            String[] parts = line.split(" ", -1);
            String where = file + ":" + (n + 1) + ": ";
            if (parts.length != 2 || parts[0].isEmpty() || parts[1].isEmpty()) {
                throw new UserInputException(where + "expected two tokens separated by one space, got '" + line + "'");
            }
            for (String part : parts) {
                if (!known.contains(part)) {
                    throw new UserInputException(where + "'" + part + "' is neither a character of the vocabulary "
                            + "nor made by an earlier merge");
                }
            }
            Merge merge = new Merge(parts[0], parts[1]);
            merges.add(merge);
            known.add(merge.merged());
        }
        return merges;
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
        return tokenizerJson(List.of());
    }

    /** tokenizer.json with these merges (none: character level). */
    public static Map<String, Object> tokenizerJson(List<Merge> merges) {
        List<String> vocabulary = vocabulary(merges);
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
        model.put("merges", merges.stream().map(m -> m.left() + " " + m.right()).toList());

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
