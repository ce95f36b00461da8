package dev.crucible.runner.abliterate.config;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.evaluation.ScorerSpec;
import dev.crucible.runner.export.ExportFormat;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.runner.prompts.PromptSourceSpec;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.study.OnExisting;
import dev.crucible.runner.units.ByteSize;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Everything {@code runner abliterate} needs to know, merged by {@link SettingsLoader} from defaults, config.toml,
 * {@code CRUCIBLE_*} variables and command-line flags. Keys and defaults are listed in {@link Setting} and in
 * {@code config.example.toml}.
 *
 * @param model                 a model folder or Hugging Face id; empty for the embedded demo model
 * @param device                {@code auto}, or a device such as {@code cuda:1}, resolved by the backends
 * @param dtype                 {@code auto}, {@code float32}, {@code bfloat16} or {@code float16}
 * @param threads               CPU threads; 0 lets the backend decide
 * @param quantization          how the model's projection weights are kept while the study runs (the edits are
 *                              computed from the weights as quantized; exports are full precision)
 * @param headless              never ask: every question takes its flag's answer or its default
 * @param seed                  the seed of the optimizer and of every randomized step
 * @param seedGenerated         true when no seed was given and {@link #seed} was drawn (print it so runs repeat)
 * @param nTrials               trials in the study (200)
 * @param nStartupTrials        random trials before TPE takes over (60)
 * @param nCandidates           TPE candidates per step (128)
 * @param maxResponseLength     new tokens generated per response when scoring (100)
 * @param batchSize             prompts per batch; 0 lets the backend choose
 * @param rowNormalization      how weight rows are treated by the edit (full)
 * @param winsorizationQuantile clamp residuals to this quantile of their magnitudes; 1.0 turns it off
 * @param orthogonalize         remove the harmless mean's component from each refusal direction (true)
 * @param directionScopes       the scopes the optimizer may choose from (global and per layer)
 * @param loraRank              rank of the adapter fitted in full row normalization (3)
 * @param goodPrompts           harmless prompts for direction finding
 * @param badPrompts            harmful prompts for direction finding
 * @param goodTestPrompts       harmless prompts for scoring (KL divergence)
 * @param badTestPrompts        harmful prompts for scoring (refusals)
 * @param systemPrompt          the system prompt of every set that does not give its own
 * @param truncatePrompts       what happens to a prompt too long for the model's context: refused, or cut
 * @param responsePrefix        text appended after the generation prompt; empty means detect it automatically
 * @param maxKl                 KL divergence above which a trial counts as visibly damaged (0.5)
 * @param studyDir              where the study journal lives; empty when not given (the command picks one)
 * @param onExisting            what to do with an existing study; empty when not given (the command asks, or
 *                              takes its headless choice)
 * @param exportFormat          merged model folder or PEFT adapter
 * @param exportDir             where to export; empty when not given (the command asks, or takes its headless
 *                              choice)
 * @param exportTrial           the trial to export; empty when not given (as exportDir)
 * @param maxShardSize          the largest safetensors shard written on export, in bytes (5GB)
 * @param scorers               the scorer instances, in display order
 * @param configFile            the config file that was read, if any
 * @param given                 the settings a flag, a variable or the config file set; the others are defaults
 */
public record AbliterationSettings(
        Optional<String> model,
        String device,
        String dtype,
        int threads,
        QuantizationConfig quantization,
        boolean headless,
        long seed,
        boolean seedGenerated,
        int nTrials,
        int nStartupTrials,
        int nCandidates,
        int maxResponseLength,
        int batchSize,
        RowNormalization rowNormalization,
        double winsorizationQuantile,
        boolean orthogonalize,
        List<DirectionScope> directionScopes,
        int loraRank,
        PromptSourceSpec goodPrompts,
        PromptSourceSpec badPrompts,
        PromptSourceSpec goodTestPrompts,
        PromptSourceSpec badTestPrompts,
        String systemPrompt,
        PromptTruncation truncatePrompts,
        Optional<String> responsePrefix,
        double maxKl,
        Optional<Path> studyDir,
        Optional<OnExisting> onExisting,
        ExportFormat exportFormat,
        Optional<Path> exportDir,
        OptionalInt exportTrial,
        long maxShardSize,
        List<ScorerSpec> scorers,
        Optional<Path> configFile,
        Set<Setting> given) {

    /** The {@code response_prefix} value that asks for automatic detection. */
    public static final String AUTO = "auto";

    public AbliterationSettings {
        Objects.requireNonNull(model, "model is null");
        Objects.requireNonNull(device, "device is null");
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(quantization, "quantization is null");
        Objects.requireNonNull(rowNormalization, "rowNormalization is null");
        directionScopes = List.copyOf(directionScopes);
        Objects.requireNonNull(goodPrompts, "goodPrompts is null");
        Objects.requireNonNull(badPrompts, "badPrompts is null");
        Objects.requireNonNull(goodTestPrompts, "goodTestPrompts is null");
        Objects.requireNonNull(badTestPrompts, "badTestPrompts is null");
        Objects.requireNonNull(systemPrompt, "systemPrompt is null");
        Objects.requireNonNull(truncatePrompts, "truncatePrompts is null");
        Objects.requireNonNull(responsePrefix, "responsePrefix is null");
        Objects.requireNonNull(studyDir, "studyDir is null");
        Objects.requireNonNull(onExisting, "onExisting is null");
        Objects.requireNonNull(exportFormat, "exportFormat is null");
        Objects.requireNonNull(exportDir, "exportDir is null");
        Objects.requireNonNull(exportTrial, "exportTrial is null");
        scorers = List.copyOf(scorers);
        Objects.requireNonNull(configFile, "configFile is null");
        given = given.isEmpty() ? Set.of() : Collections.unmodifiableSet(EnumSet.copyOf(given));
    }

    /** Whether {@code setting} was given (by a flag, a variable or the config file) rather than left at its default. */
    public boolean isGiven(Setting setting) {
        return given.contains(setting);
    }

    /** The system prompt for {@code set}: its own when it has one, else the global one. */
    public String systemPromptFor(PromptSourceSpec set) {
        return set.systemPrompt().orElse(systemPrompt);
    }

    /**
     * The settings in config.toml form (keys of {@link Setting}, plain strings, numbers, booleans, lists and
     * tables), for the reproducibility record; loading it back gives the same settings.
     */
    public Map<String, Object> toTable() {
        Map<String, Object> table = new LinkedHashMap<>();
        model.ifPresent(m -> table.put("model", m));
        table.put("device", device);
        table.put("dtype", dtype);
        table.put("threads", threads);
        table.put("quantization", quantization.method().userName());
        if (quantization.enabled()) {
            table.put("quant_scheme", quantization.scheme().userName());
            if (quantization.blockSize() > 0) {
                table.put("quant_block_size", quantization.blockSize());
            }
        }
        table.put("quant_exclude", quantization.exclude());
        table.put("headless", headless);
        table.put("seed", seed);
        table.put("n_trials", nTrials);
        table.put("n_startup_trials", nStartupTrials);
        table.put("n_candidates", nCandidates);
        table.put("max_response_length", maxResponseLength);
        table.put("batch_size", batchSize);
        table.put("row_normalization", lower(rowNormalization));
        table.put("winsorization_quantile", winsorizationQuantile);
        table.put("orthogonalize", orthogonalize);
        table.put("direction_scopes", directionScopes.stream().map(AbliterationSettings::lower).toList());
        table.put("lora_rank", loraRank);
        table.put("system_prompt", systemPrompt);
        table.put("truncate_prompts", lower(truncatePrompts));
        table.put("response_prefix", responsePrefix.orElse(AUTO));
        table.put("max_kl", maxKl);
        studyDir.ifPresent(d -> table.put("study_dir", d.toString()));
        onExisting.ifPresent(o -> table.put("on_existing", lower(o)));
        table.put("export_format", lower(exportFormat));
        exportDir.ifPresent(d -> table.put("export_dir", d.toString()));
        exportTrial.ifPresent(t -> table.put("export_trial", t));
        table.put("max_shard_size", ByteSize.format(maxShardSize));
        // Tables after plain keys, as TOML requires.
        table.put("good_prompts", goodPrompts.toTable());
        table.put("bad_prompts", badPrompts.toTable());
        table.put("good_test_prompts", goodTestPrompts.toTable());
        table.put("bad_test_prompts", badTestPrompts.toTable());
        List<Map<String, Object>> scorerTables = new ArrayList<>();
        scorers.forEach(s -> scorerTables.add(s.toTable()));
        table.put("scorers", scorerTables);
        return table;
    }

    private static String lower(Enum<?> constant) {
        return constant.name().toLowerCase(Locale.ROOT);
    }
}
