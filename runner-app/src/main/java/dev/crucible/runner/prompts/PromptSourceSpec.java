package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Where one prompt set comes from and how its prompts are dressed.
 *
 * <p>On the command line (and in {@code CRUCIBLE_*} variables) a source is one string:
 * <pre>
 *   [hf:|bundled:]SOURCE[:COLUMN][@SPLIT][[START:STOP]]
 *
 *   prompts.txt                          every non-blank line
 *   prompts.txt[:400]                    the first 400 of them
 *   data.jsonl:prompt[-50:]              the last 50 values of the "prompt" field
 *   data.csv:question[100:200]           rows 100..199 of the "question" column
 *   shard.parquet:text                   a string column of a parquet file
 *   mlabonne/harmful_behaviors@train[:400]       a Hugging Face dataset in the local hub cache
 *   hf:org/name/subset:text@test[:100]   an explicit dataset id, limited to one folder of it
 *   bundled:harmful/test[:100]           a prompt set shipped with Crucible
 * </pre>
 * The column defaults to {@code text}, or to the only column there is; a dataset's split defaults to
 * {@code train}. In {@code config.toml} a prompt set is a table with the same parts spelled out:
 * {@code dataset}, {@code split}, {@code column}, {@code revision}, plus {@code prefix}, {@code suffix}
 * (wrapped around every prompt) and {@code system_prompt} (this set's system prompt instead of the global one).
 */
public record PromptSourceSpec(String source, Optional<String> revision, SplitSlice split, Optional<String> column,
                               String prefix, String suffix, Optional<String> systemPrompt) {

    public static final String HUB_SCHEME = "hf:";
    public static final String BUNDLED_SCHEME = "bundled:";

    /** The keys of a prompt-set table in config.toml. */
    public static final List<String> TABLE_KEYS =
            List.of("dataset", "split", "column", "revision", "prefix", "suffix", "system_prompt");

    /** The keys a string spec sets; the others (prefix, suffix, system_prompt) are dressing kept across layers. */
    public static final Set<String> SOURCE_KEYS = Set.of("dataset", "split", "column", "revision");

    /** Split names in the one-string form: no dots, so {@code notes@2024.txt} stays a file name. */
    private static final Pattern COMPACT_SPLIT = Pattern.compile("[A-Za-z0-9_-]+");

    public PromptSourceSpec {
        Objects.requireNonNull(source, "source is null");
        Objects.requireNonNull(revision, "revision is null");
        Objects.requireNonNull(split, "split is null");
        Objects.requireNonNull(column, "column is null");
        Objects.requireNonNull(prefix, "prefix is null");
        Objects.requireNonNull(suffix, "suffix is null");
        Objects.requireNonNull(systemPrompt, "systemPrompt is null");
        if (source.isBlank()) {
            throw new UserInputException("a prompt source is empty: name a file, a dataset id or bundled:<name>");
        }
    }

    /**
     * Parses the one-string form described on the class.
     *
     * @throws UserInputException when the slice or the source is malformed
     */
    public static PromptSourceSpec parse(String text) {
        Objects.requireNonNull(text, "text is null");
        String rest = text.strip();
        SplitSlice slice = SplitSlice.ALL;
        if (rest.endsWith("]")) {
            int open = rest.lastIndexOf('[');
            if (open < 0) {
                throw new UserInputException("prompt source '" + text + "' ends with ']' but has no '[': write a"
                        + " slice like " + "prompts.txt[:400]");
            }
            slice = SplitSlice.parse(rest.substring(open));
            rest = rest.substring(0, open);
        }
        Optional<String> splitName = Optional.empty();
        int at = rest.lastIndexOf('@');
        if (at > 0 && COMPACT_SPLIT.matcher(rest.substring(at + 1)).matches()) {
            splitName = Optional.of(rest.substring(at + 1));
            rest = rest.substring(0, at);
        }
        String scheme = rest.startsWith(HUB_SCHEME) ? HUB_SCHEME : rest.startsWith(BUNDLED_SCHEME) ? BUNDLED_SCHEME : "";
        String body = rest.substring(scheme.length());
        Optional<String> column = Optional.empty();
        int colon = body.lastIndexOf(':');
        boolean windowsDrive = colon == 1 && Character.isLetter(body.charAt(0));
        if (colon > 0 && !windowsDrive) {
            String candidate = body.substring(colon + 1);
            if (!candidate.isEmpty() && candidate.indexOf('/') < 0 && candidate.indexOf('\\') < 0) {
                column = Optional.of(candidate);
                body = body.substring(0, colon);
            }
        }
        return new PromptSourceSpec(scheme + body, Optional.empty(), slice.withSplit(splitName), column, "", "",
                Optional.empty());
    }

    /**
     * Builds a spec from a config table such as {@code [good_prompts]}. {@code dataset} may itself use the
     * one-string form, as long as it does not repeat a part the table sets.
     *
     * @param key the table's name, for messages ({@code good_prompts})
     * @throws UserInputException naming {@code key.field} for unknown fields, wrong types or parts given twice
     */
    public static PromptSourceSpec fromTable(String key, Map<String, ?> table) {
        Objects.requireNonNull(table, "table is null");
        Optional<String> dataset = text(key, table, "dataset");
        if (dataset.isEmpty()) {
            throw new UserInputException("'" + key + "' needs dataset = \"...\" (a file, a dataset id or"
                    + " bundled:<name>)");
        }
        return parse(dataset.get()).applyTable(key, table);
    }

    /**
     * This spec with a table's fields applied, as a config file's {@code [good_prompts]} table applies to the
     * default set: {@code dataset} replaces the source (with the column and split its one-string form gives),
     * the other fields replace one part each; parts the table does not name are kept.
     *
     * @throws UserInputException naming {@code key.field} for unknown fields, wrong types or parts given twice
     */
    public PromptSourceSpec applyTable(String key, Map<String, ?> table) {
        Objects.requireNonNull(table, "table is null");
        for (String field : table.keySet()) {
            if (!TABLE_KEYS.contains(field)) {
                throw new UserInputException("unknown key '" + key + "." + field + "'" + Suggestions.didYouMean(field,
                        TABLE_KEYS) + " (a prompt set has " + String.join(", ", TABLE_KEYS) + ")");
            }
        }
        PromptSourceSpec spec = this;
        Optional<String> dataset = text(key, table, "dataset");
        if (dataset.isPresent()) {
            PromptSourceSpec parsed = parse(dataset.get());
            if (table.containsKey("split") && (parsed.split.split().isPresent() || parsed.split.hasSlice())) {
                throw parsed.twice(key, "split");
            }
            if (table.containsKey("column") && parsed.column.isPresent()) {
                throw parsed.twice(key, "column");
            }
            spec = spec.withSourceOf(parsed);
        }
        for (String field : List.of("split", "column", "revision", "prefix", "suffix", "system_prompt")) {
            Optional<String> value = text(key, table, field);
            if (value.isPresent()) {
                spec = spec.with(key, field, value.get());
            }
        }
        return spec;
    }

    private static Optional<String> text(String key, Map<String, ?> table, String field) {
        Object value = table.get(field);
        if (value == null) {
            return Optional.empty();
        }
        if (!(value instanceof String string)) {
            throw new UserInputException("'" + key + "." + field + "' must be a string, got " + value);
        }
        return Optional.of(string);
    }

    /**
     * This spec with one table field replaced, as a higher settings layer ({@code CRUCIBLE_GOOD_PROMPTS_COLUMN},
     * the command-line override {@code good_prompts.column}) replaces it. {@code dataset} replaces the source
     * with everything its one-string form says (column, split and slice included).
     *
     * @throws UserInputException for an unknown field or a malformed value
     */
    public PromptSourceSpec with(String key, String field, String value) {
        return switch (field) {
            case "dataset" -> {
                PromptSourceSpec parsed = parse(value);
                yield new PromptSourceSpec(parsed.source, revision, parsed.split, parsed.column, prefix, suffix,
                        systemPrompt);
            }
            case "split" ->
                    new PromptSourceSpec(source, revision, SplitSlice.parse(value), column, prefix, suffix, systemPrompt);
            case "column" -> new PromptSourceSpec(source, revision, split, nonBlank(value), prefix, suffix, systemPrompt);
            case "revision" ->
                    new PromptSourceSpec(source, nonBlank(value), split, column, prefix, suffix, systemPrompt);
            case "prefix" -> new PromptSourceSpec(source, revision, split, column, value, suffix, systemPrompt);
            case "suffix" -> new PromptSourceSpec(source, revision, split, column, prefix, value, systemPrompt);
            case "system_prompt" ->
                    new PromptSourceSpec(source, revision, split, column, prefix, suffix, Optional.of(value));
            default -> throw new UserInputException("unknown key '" + key + "." + field + "'"
                    + Suggestions.didYouMean(field, TABLE_KEYS) + " (a prompt set has " + String.join(", ", TABLE_KEYS)
                    + ")");
        };
    }

    private UserInputException twice(String key, String field) {
        return new UserInputException("'" + key + "' gives the " + field + " twice: in dataset = \"" + compact()
                + "\" and in " + field + " = ...; keep one");
    }

    private static Optional<String> nonBlank(String value) {
        return value.isBlank() ? Optional.empty() : Optional.of(value.strip());
    }

    /**
     * {@code other}'s source (dataset, revision, split, column) with this spec's prefix, suffix and system
     * prompt: what a higher settings layer giving a one-string source changes.
     */
    public PromptSourceSpec withSourceOf(PromptSourceSpec other) {
        return new PromptSourceSpec(other.source, other.revision, other.split, other.column, prefix, suffix,
                systemPrompt);
    }

    /** Wraps one prompt in this set's prefix and suffix. */
    public String dress(String prompt) {
        return prefix + prompt + suffix;
    }

    /** The one-string form that {@link #parse} reads back (revision and dressing are not part of it). */
    public String compact() {
        StringBuilder text = new StringBuilder(source);
        column.ifPresent(c -> text.append(':').append(c));
        split.split().ifPresent(s -> text.append('@').append(s));
        text.append(split.sliceText());
        return text.toString();
    }

    /** The table fields this spec sets, in config.toml form; for reproducibility records. */
    public Map<String, String> toTable() {
        Map<String, String> table = new LinkedHashMap<>();
        table.put("dataset", source);
        if (!split.toString().isEmpty()) {
            table.put("split", split.toString());
        }
        column.ifPresent(c -> table.put("column", c));
        revision.ifPresent(r -> table.put("revision", r));
        if (!prefix.isEmpty()) {
            table.put("prefix", prefix);
        }
        if (!suffix.isEmpty()) {
            table.put("suffix", suffix);
        }
        systemPrompt.ifPresent(s -> table.put("system_prompt", s));
        return Collections.unmodifiableMap(table);
    }

    @Override
    public String toString() {
        return compact();
    }
}
