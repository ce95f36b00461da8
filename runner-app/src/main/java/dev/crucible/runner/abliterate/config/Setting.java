package dev.crucible.runner.abliterate.config;

import dev.crucible.api.scoring.Optimization;
import dev.crucible.runner.evaluation.ScorerSpec;
import dev.crucible.runner.export.ExportFormat;
import dev.crucible.runner.prompts.PromptSourceSpec;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.study.OnExisting;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Every setting of {@code runner abliterate}: its config.toml key (snake_case, as the method document names
 * things), its command-line flag, its {@code CRUCIBLE_*} variable, its type and its default ({@code null} when
 * absent means "not set": a random seed, the demo model, ask interactively).
 */
public enum Setting {
    MODEL("model", "--model", new ValueType.Text(), null),
    DEVICE("device", "--device", new ValueType.Text(), "auto"),
    DTYPE("dtype", "--dtype", new ValueType.Choice(List.of("auto", "float32", "bfloat16", "float16")), "auto"),
    THREADS("threads", "--threads", new ValueType.Int(0), 0),
    QUANTIZATION("quantization", "--quantization", new ValueType.Choice(List.of("none", "int8", "int4", "nf4")), "none"),
    QUANT_SCHEME("quant_scheme", "--quant-scheme",
            new ValueType.Choice(List.of("per-channel", "blockwise", "asymmetric")), null),
    QUANT_BLOCK_SIZE("quant_block_size", "--quant-block-size", new ValueType.Int(2), null),
    QUANT_EXCLUDE("quant_exclude", "--quant-exclude", new ValueType.Names(), null),
    HEADLESS("headless", "--headless", new ValueType.Bool(), false),
    SEED("seed", "--seed", new ValueType.Whole(), null),
    N_TRIALS("n_trials", "--trials", new ValueType.Int(1), 200),
    N_STARTUP_TRIALS("n_startup_trials", "--startup-trials", new ValueType.Int(0), 60),
    N_CANDIDATES("n_candidates", "--candidates", new ValueType.Int(1), 128),
    MAX_RESPONSE_LENGTH("max_response_length", "--max-response-length", new ValueType.Int(1), 100),
    BATCH_SIZE("batch_size", "--batch-size", new ValueType.Int(0), 0),
    ROW_NORMALIZATION("row_normalization", "--row-normalization", new ValueType.OneOf<>(RowNormalization.class),
            RowNormalization.FULL),
    WINSORIZATION_QUANTILE("winsorization_quantile", "--winsorization-quantile",
            new ValueType.Decimal(0, false, 1), 1.0),
    ORTHOGONALIZE("orthogonalize", "--orthogonalize", new ValueType.Bool(), true),
    DIRECTION_SCOPES("direction_scopes", "--direction-scopes", new ValueType.ListOf<>(DirectionScope.class),
            List.of(DirectionScope.GLOBAL, DirectionScope.PER_LAYER)),
    LORA_RANK("lora_rank", "--lora-rank", new ValueType.Int(1), 3),
    GOOD_PROMPTS("good_prompts", "--good-prompts", new ValueType.Structured("a prompt source"),
            PromptSourceSpec.parse("bundled:harmless/train[:400]")),
    BAD_PROMPTS("bad_prompts", "--bad-prompts", new ValueType.Structured("a prompt source"),
            PromptSourceSpec.parse("bundled:harmful/train[:400]")),
    GOOD_TEST_PROMPTS("good_test_prompts", "--good-test-prompts", new ValueType.Structured("a prompt source"),
            PromptSourceSpec.parse("bundled:harmless/test[:100]")),
    BAD_TEST_PROMPTS("bad_test_prompts", "--bad-test-prompts", new ValueType.Structured("a prompt source"),
            PromptSourceSpec.parse("bundled:harmful/test[:100]")),
    SYSTEM_PROMPT("system_prompt", "--system-prompt", new ValueType.Text(), "You are a helpful assistant."),
    TRUNCATE_PROMPTS("truncate_prompts", "--truncate-prompts", new ValueType.OneOf<>(PromptTruncation.class),
            PromptTruncation.NONE),
    RESPONSE_PREFIX("response_prefix", "--response-prefix", new ValueType.Text(), AbliterationSettings.AUTO),
    MAX_KL("max_kl", "--max-kl", new ValueType.Decimal(0, false, Double.POSITIVE_INFINITY), 0.5),
    STUDY_DIR("study_dir", "--study", new ValueType.FilePath(), null),
    ON_EXISTING("on_existing", "--on-existing", new ValueType.OneOf<>(OnExisting.class), null),
    EXPORT_FORMAT("export_format", "--export-format", new ValueType.OneOf<>(ExportFormat.class), ExportFormat.MERGED),
    EXPORT_DIR("export_dir", "--export-dir", new ValueType.FilePath(), null),
    EXPORT_TRIAL("export_trial", "--export-trial", new ValueType.Int(0), null),
    MAX_SHARD_SIZE("max_shard_size", "--max-shard-size", new ValueType.Size(), 5_000_000_000L),
    SCORERS("scorers", null, new ValueType.Structured("an array of [[scorers]] tables"),
            List.of(new ScorerSpec("refusals", "refusals", Optional.of(Optimization.MINIMIZE), Map.of()),
                    new ScorerSpec("kl_divergence", "kl_divergence", Optional.of(Optimization.MINIMIZE), Map.of())));

    /** The prefix of every setting's environment variable. */
    public static final String ENV_PREFIX = "CRUCIBLE_";

    private static final Map<String, Setting> BY_KEY =
            Arrays.stream(values()).collect(Collectors.toUnmodifiableMap(Setting::key, Function.identity()));

    private final String key;
    private final String flag;
    private final ValueType type;
    private final Object defaultValue;

    Setting(String key, String flag, ValueType type, Object defaultValue) {
        this.key = key;
        this.flag = flag;
        this.type = type;
        this.defaultValue = defaultValue;
    }

    /** The config.toml key, also the key of command-line overrides given to {@link SettingsLoader}. */
    public String key() {
        return key;
    }

    /** The command-line flag, or empty for settings only a config file can hold ({@code scorers}). */
    public Optional<String> flag() {
        return Optional.ofNullable(flag);
    }

    /** {@code CRUCIBLE_N_TRIALS} for {@code n_trials}. */
    public String envName() {
        return ENV_PREFIX + key.toUpperCase(Locale.ROOT);
    }

    ValueType type() {
        return type;
    }

    /** The default, or empty for settings that are absent unless given. */
    public Optional<Object> defaultValue() {
        return Optional.ofNullable(defaultValue);
    }

    public boolean isPromptSet() {
        return this == GOOD_PROMPTS || this == BAD_PROMPTS || this == GOOD_TEST_PROMPTS || this == BAD_TEST_PROMPTS;
    }

    public static Optional<Setting> byKey(String key) {
        return Optional.ofNullable(BY_KEY.get(key));
    }

    public static List<String> keys() {
        return Arrays.stream(values()).map(Setting::key).toList();
    }
}
