package dev.crucible.runner.abliterate.config;

import dev.crucible.api.quant.QuantizationConfig;
import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.toml.TomlMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.runner.evaluation.ScorerSpec;
import dev.crucible.runner.export.ExportFormat;
import dev.crucible.runner.prompts.PromptSourceSpec;
import dev.crucible.runner.prompts.Suggestions;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.study.OnExisting;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * Merges the settings of {@code runner abliterate} from four layers, each overriding the one before:
 * defaults &lt; {@code config.toml} &lt; {@code CRUCIBLE_*} environment variables &lt; command-line flags.
 *
 * <ul>
 *   <li>The config file is {@code --config FILE}, else {@code $CRUCIBLE_CONFIG}, else {@code ./config.toml} when
 *       the working directory has one. Its keys are those of {@link Setting}; an unknown key or table is an
 *       error that names it and suggests the closest valid key; malformed TOML is one line with file:line.</li>
 *   <li>Environment: {@code CRUCIBLE_<KEY>} for every key ({@code CRUCIBLE_N_TRIALS=50}); a prompt set's parts
 *       as {@code CRUCIBLE_GOOD_PROMPTS_SYSTEM_PROMPT}. A {@code CRUCIBLE_} name within typo distance of a setting
 *       is an error; other {@code CRUCIBLE_} variables belong to other parts of Crucible and are left alone.</li>
 *   <li>Command line: only the flags the user actually gave, keyed by config key ({@code n_trials}) or
 *       {@code <prompt set>.<part>} ({@code good_prompts.system_prompt}); typed values or strings.</li>
 * </ul>
 * A prompt set given as one string on a higher layer replaces the lower layer's source (dataset, column, split)
 * and keeps its prefix, suffix and system prompt; given as a table, only the named parts change.
 */
public final class SettingsLoader {

    public static final String DEFAULT_CONFIG = "config.toml";
    public static final String CONFIG_ENV = "CRUCIBLE_CONFIG";

    /** {@code CRUCIBLE_} variables that are not abliteration settings (read by the plugin host, probing, ...). */
    private static final Set<String> OTHER_VARIABLES =
            Set.of("CRUCIBLE_CONFIG", "CRUCIBLE_DEVICE_PRIORITY", "CRUCIBLE_PLUGINS_DIR", "CRUCIBLE_PROBE_TIMEOUT_MS");

    private static final TomlMapper TOML = new TomlMapper();
    /** jackson-dataformat-toml's message for a key given twice. */
    private static final String DUPLICATE_KEY = "Duplicate key";
    private static final SecureRandom SEEDS = new SecureRandom();

    private final Map<Setting, Object> values = new EnumMap<>(Setting.class);
    private final Set<Setting> given = EnumSet.noneOf(Setting.class);

    private SettingsLoader() {
        for (Setting setting : Setting.values()) {
            setting.defaultValue().ifPresent(value -> values.put(setting, value));
        }
    }

    /**
     * Loads the settings; a missing seed is drawn at random and recorded in the result.
     *
     * @param configFile   {@code --config FILE}, when given (then it must exist)
     * @param env          the environment ({@code System.getenv()} in production)
     * @param cliOverrides the flags the user gave, by config key; absent flags must be absent from the map
     * @param workingDir   where {@code ./config.toml} is looked for and relative paths start
     * @throws UserInputException for every mistake in the file, the environment or the values
     */
    public static AbliterationSettings load(Optional<Path> configFile, Map<String, String> env,
                                            Map<String, Object> cliOverrides, Path workingDir) {
        return load(configFile, env, cliOverrides, workingDir, () -> SEEDS.nextInt(Integer.MAX_VALUE));
    }

    /** As {@link #load(Optional, Map, Map, Path)}, drawing a missing seed from {@code randomSeed}. */
    public static AbliterationSettings load(Optional<Path> configFile, Map<String, String> env,
                                            Map<String, Object> cliOverrides, Path workingDir,
                                            LongSupplier randomSeed) {
        Objects.requireNonNull(configFile, "configFile is null");
        Objects.requireNonNull(env, "env is null");
        Objects.requireNonNull(cliOverrides, "cliOverrides is null");
        Objects.requireNonNull(workingDir, "workingDir is null");
        SettingsLoader loader = new SettingsLoader();
        Optional<Path> file = chooseConfig(configFile, env, workingDir);
        file.ifPresent(loader::applyFile);
        loader.applyEnvironment(env);
        loader.applyCommandLine(cliOverrides);
        return loader.build(file, workingDir, randomSeed);
    }

    /** The config file this layer set would read: {@code --config}, {@code $CRUCIBLE_CONFIG}, or ./config.toml. */
    public static Optional<Path> chooseConfig(Optional<Path> configFile, Map<String, String> env, Path workingDir) {
        Optional<Path> named = configFile.or(() -> Optional.ofNullable(env.get(CONFIG_ENV))
                .filter(v -> !v.isBlank()).map(v -> Path.of(v.strip())));
        if (named.isPresent()) {
            Path path = workingDir.resolve(named.get());
            if (!Files.isRegularFile(path)) {
                throw new UserInputException("config file " + named.get() + " does not exist (looked for " + path
                        + ")");
            }
            return Optional.of(path);
        }
        Path local = workingDir.resolve(DEFAULT_CONFIG);
        return Files.isRegularFile(local) ? Optional.of(local) : Optional.empty();
    }

    // ---- config.toml ----

    /**
     * The line of the key a duplicate-key error is about. Jackson's TOML parser notices the duplicate only after it
     * has read the value and the token after it, and reports that token's line: the next key, past any blank lines
     * and comments, or the end of the file. The value ends on the first line at which the document, cut there, shows
     * the duplicate; its key is on the line after the last shorter cut that still parses (a multi-line array starts
     * above its end).
     */
    static int duplicateKeyLine(List<String> lines, int reported) {
        int end = Math.min(reported, lines.size());
        while (end > 1 && DUPLICATE_KEY.equals(parseError(lines, end - 1))) {
            end--;
        }
        int start = end;
        while (start > 1 && parseError(lines, start - 1) != null) {
            start--;
        }
        return start;
    }

    /** The parser's message for the first {@code count} lines, null when they parse. */
    private static String parseError(List<String> lines, int count) {
        try {
            TOML.readTree(String.join("\n", lines.subList(0, count)) + "\n");
            return null;
        } catch (JacksonException e) {
            return e.getOriginalMessage();
        }
    }

    private void applyFile(Path file) {
        JsonNode root;
        String text;
        try {
            text = Files.readString(file);
        } catch (CharacterCodingException e) {
            throw new UserInputException("config file " + file + " is not UTF-8 text (TOML files are)", e);
        } catch (IOException e) {
            throw new UserInputException("cannot read config file " + file + ": " + e.getMessage(), e);
        }
        try {
            root = TOML.readTree(text);
        } catch (JacksonException e) {
            JsonLocation location = e.getLocation();
            int reported = location == null ? 0 : location.getLineNr();
            if (DUPLICATE_KEY.equals(e.getOriginalMessage()) && reported > 0) {
                reported = duplicateKeyLine(text.lines().toList(), reported);
            }
            String line = reported < 1 ? "" : ":" + reported;
            throw new UserInputException(file + line + ": malformed TOML (" + firstLine(e.getOriginalMessage())
                    + ")", e);
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return; // an empty file
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            String key = entry.getKey();
            Setting setting = Setting.byKey(key).orElseThrow(() -> new UserInputException("unknown key '" + key
                    + "' in " + file + Suggestions.didYouMean(key, Setting.keys())
                    + " (config.example.toml lists every key)"));
            Object raw = toJava(entry.getValue());
            String where = key + " in " + file.getFileName();
            if (setting.isPromptSet()) {
                applyPromptSet(setting, raw, where);
            } else if (setting == Setting.SCORERS) {
                set(setting, scorers(raw, where));
            } else {
                set(setting, setting.type().convert(raw, ValueType.Origin.FILE, where));
            }
        }
    }

    private static Object toJava(JsonNode node) {
        if (node.isObject()) {
            Map<String, Object> table = new LinkedHashMap<>();
            node.fields().forEachRemaining(e -> table.put(e.getKey(), toJava(e.getValue())));
            return table;
        }
        if (node.isArray()) {
            List<Object> list = new ArrayList<>();
            node.forEach(element -> list.add(toJava(element)));
            return list;
        }
        if (node.isBoolean()) {
            return node.booleanValue();
        }
        if (node.isIntegralNumber()) {
            return node.canConvertToLong() ? (Object) node.longValue() : node.bigIntegerValue();
        }
        if (node.isNumber()) {
            return node.doubleValue();
        }
        return node.asText();
    }

    // ---- environment ----

    private void applyEnvironment(Map<String, String> env) {
        // Sorted, so that the first error reported does not depend on the map's order.
        for (Map.Entry<String, String> entry : new TreeMap<>(env).entrySet()) {
            String name = entry.getKey();
            if (!name.startsWith(Setting.ENV_PREFIX) || OTHER_VARIABLES.contains(name)) {
                continue;
            }
            String key = name.substring(Setting.ENV_PREFIX.length()).toLowerCase(Locale.ROOT);
            Optional<Setting> setting = Setting.byKey(key);
            if (setting.isPresent()) {
                applyText(setting.get(), entry.getValue(), name);
            } else if (!applyPromptPart(key, entry.getValue(), name)) {
                Optional<String> near = Suggestions.closest(key, envKeys());
                if (near.isPresent()) {
                    throw new UserInputException("unknown setting " + name + "; did you mean " + Setting.ENV_PREFIX
                            + near.get().toUpperCase(Locale.ROOT) + "?");
                }
            }
        }
    }

    private static List<String> envKeys() {
        List<String> keys = new ArrayList<>();
        for (Setting setting : Setting.values()) {
            if (setting == Setting.SCORERS) {
                continue;
            }
            keys.add(setting.key());
            if (setting.isPromptSet()) {
                PromptSourceSpec.TABLE_KEYS.forEach(part -> keys.add(setting.key() + "_" + part));
            }
        }
        return keys;
    }

    /** {@code good_prompts_system_prompt} and the like; false when {@code key} is no prompt-set part. */
    private boolean applyPromptPart(String key, String value, String where) {
        for (Setting setting : Setting.values()) {
            if (setting.isPromptSet() && key.startsWith(setting.key() + "_")) {
                String part = key.substring(setting.key().length() + 1);
                if (PromptSourceSpec.TABLE_KEYS.contains(part)) {
                    set(setting, promptSet(setting).with(setting.key(), part, value));
                    return true;
                }
            }
        }
        return false;
    }

    private void applyText(Setting setting, String value, String where) {
        if (setting.isPromptSet()) {
            applyPromptSet(setting, value, where);
        } else if (setting == Setting.SCORERS) {
            throw new UserInputException(where + ": scorers can only be set in config.toml, as [[scorers]] tables");
        } else {
            set(setting, setting.type().convert(value, ValueType.Origin.TEXT, where));
        }
    }

    // ---- command line ----

    private void applyCommandLine(Map<String, Object> overrides) {
        for (Map.Entry<String, Object> entry : overrides.entrySet()) {
            String key = entry.getKey();
            Object value = entry.getValue();
            if (value == null) {
                continue;
            }
            int dot = key.indexOf('.');
            if (dot > 0) {
                Setting setting = Setting.byKey(key.substring(0, dot)).filter(Setting::isPromptSet)
                        .orElseThrow(() -> new IllegalArgumentException("unknown setting override '" + key + "'"));
                if (!(value instanceof String text)) {
                    throw new IllegalArgumentException("override '" + key + "' must be a string");
                }
                set(setting, promptSet(setting).with(setting.key(), key.substring(dot + 1), text));
                continue;
            }
            Setting setting = Setting.byKey(key)
                    .orElseThrow(() -> new IllegalArgumentException("unknown setting override '" + key + "'"));
            String where = setting.flag().orElse(key);
            if (setting.isPromptSet()) {
                applyPromptSet(setting, value, where);
            } else if (setting == Setting.SCORERS) {
                set(setting, scorers(value, where));
            } else {
                set(setting, setting.type().convert(value, ValueType.Origin.TEXT, where));
            }
        }
    }

    // ---- structured settings ----

    /** A value some layer gave (as opposed to a default). */
    private void set(Setting setting, Object value) {
        values.put(setting, value);
        given.add(setting);
    }

    private PromptSourceSpec promptSet(Setting setting) {
        return (PromptSourceSpec) values.get(setting);
    }

    private void applyPromptSet(Setting setting, Object raw, String where) {
        PromptSourceSpec current = promptSet(setting);
        PromptSourceSpec next;
        if (raw instanceof PromptSourceSpec spec) {
            next = spec;
        } else if (raw instanceof String text) {
            next = current.withSourceOf(PromptSourceSpec.parse(text));
        } else if (raw instanceof Map<?, ?> table) {
            @SuppressWarnings("unchecked")
            Map<String, ?> fields = (Map<String, ?>) table;
            next = current.applyTable(setting.key(), fields);
        } else {
            throw ValueType.mismatch(where, "a prompt source string or a table with dataset = \"...\"", raw);
        }
        set(setting, next);
    }

    private static List<ScorerSpec> scorers(Object raw, String where) {
        if (!(raw instanceof List<?> list)) {
            throw ValueType.mismatch(where, "an array of [[scorers]] tables", raw);
        }
        List<ScorerSpec> scorers = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (int i = 0; i < list.size(); i++) {
            Object item = list.get(i);
            ScorerSpec scorer;
            if (item instanceof ScorerSpec spec) {
                scorer = spec;
            } else if (item instanceof Map<?, ?> table) {
                @SuppressWarnings("unchecked")
                Map<String, ?> fields = (Map<String, ?>) table;
                scorer = ScorerSpec.fromTable("scorers[" + (i + 1) + "]", fields);
            } else {
                throw ValueType.mismatch("scorers[" + (i + 1) + "]", "a table with plugin = \"...\"", item);
            }
            if (!names.add(scorer.instanceName())) {
                throw new UserInputException("two scorers are named '" + scorer.instanceName() + "': give one"
                        + " instance_name = \"...\" to tell them apart");
            }
            scorers.add(scorer);
        }
        if (scorers.isEmpty()) {
            throw new UserInputException(where + " is empty: a study needs at least one scorer");
        }
        return List.copyOf(scorers);
    }

    // ---- result ----

    @SuppressWarnings("unchecked")
    private AbliterationSettings build(Optional<Path> file, Path workingDir, LongSupplier randomSeed) {
        boolean seedGenerated = !values.containsKey(Setting.SEED);
        long seed = seedGenerated ? randomSeed.getAsLong() : (Long) values.get(Setting.SEED);
        String prefix = (String) values.get(Setting.RESPONSE_PREFIX);
        Integer exportTrial = (Integer) values.get(Setting.EXPORT_TRIAL);
        return new AbliterationSettings(
                Optional.ofNullable((String) values.get(Setting.MODEL)).filter(m -> !m.isBlank()),
                (String) values.get(Setting.DEVICE),
                (String) values.get(Setting.DTYPE),
                (Integer) values.get(Setting.THREADS),
                QuantizationConfig.parse((String) values.get(Setting.QUANTIZATION),
                        (String) values.get(Setting.QUANT_SCHEME), (Integer) values.get(Setting.QUANT_BLOCK_SIZE),
                        (List<String>) values.get(Setting.QUANT_EXCLUDE), false),
                (Boolean) values.get(Setting.HEADLESS),
                seed,
                seedGenerated,
                (Integer) values.get(Setting.N_TRIALS),
                (Integer) values.get(Setting.N_STARTUP_TRIALS),
                (Integer) values.get(Setting.N_CANDIDATES),
                (Integer) values.get(Setting.MAX_RESPONSE_LENGTH),
                (Integer) values.get(Setting.BATCH_SIZE),
                (RowNormalization) values.get(Setting.ROW_NORMALIZATION),
                (Double) values.get(Setting.WINSORIZATION_QUANTILE),
                (Boolean) values.get(Setting.ORTHOGONALIZE),
                (List<DirectionScope>) values.get(Setting.DIRECTION_SCOPES),
                (Integer) values.get(Setting.LORA_RANK),
                promptSet(Setting.GOOD_PROMPTS),
                promptSet(Setting.BAD_PROMPTS),
                promptSet(Setting.GOOD_TEST_PROMPTS),
                promptSet(Setting.BAD_TEST_PROMPTS),
                (String) values.get(Setting.SYSTEM_PROMPT),
                (PromptTruncation) values.get(Setting.TRUNCATE_PROMPTS),
                prefix.equalsIgnoreCase(AbliterationSettings.AUTO) ? Optional.empty() : Optional.of(prefix),
                (Double) values.get(Setting.MAX_KL),
                path(Setting.STUDY_DIR, workingDir),
                Optional.ofNullable((OnExisting) values.get(Setting.ON_EXISTING)),
                (ExportFormat) values.get(Setting.EXPORT_FORMAT),
                path(Setting.EXPORT_DIR, workingDir),
                exportTrial == null ? OptionalInt.empty() : OptionalInt.of(exportTrial),
                (Long) values.get(Setting.MAX_SHARD_SIZE),
                (List<ScorerSpec>) values.get(Setting.SCORERS),
                file,
                given);
    }

    private Optional<Path> path(Setting setting, Path workingDir) {
        return Optional.ofNullable((Path) values.get(setting)).map(p -> workingDir.resolve(p).normalize());
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "syntax error";
        }
        int newline = message.indexOf('\n');
        return (newline < 0 ? message : message.substring(0, newline)).strip();
    }
}
