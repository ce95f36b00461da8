package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.io.WriteFailure;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.Host;
import dev.crucible.runner.abliterate.AblationParameters;
import dev.crucible.runner.abliterate.Abliterator;
import dev.crucible.runner.abliterate.ParetoPlot;
import dev.crucible.runner.abliterate.Reproduction;
import dev.crucible.runner.abliterate.ResponsePrefix;
import dev.crucible.runner.abliterate.SearchSpace;
import dev.crucible.runner.abliterate.StudyCache;
import dev.crucible.runner.abliterate.StudyLoop;
import dev.crucible.runner.abliterate.TrialSelection;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.abliterate.config.RowNormalization;
import dev.crucible.runner.abliterate.config.Setting;
import dev.crucible.runner.abliterate.config.SettingsLoader;
import dev.crucible.runner.evaluation.ScorerInstance;
import dev.crucible.runner.evaluation.ScorerSpec;
import dev.crucible.runner.evaluation.Scorers;
import dev.crucible.runner.export.BaseFiles;
import dev.crucible.runner.export.ExportFormat;
import dev.crucible.runner.export.ExportWeights;
import dev.crucible.runner.export.ExportedModel;
import dev.crucible.runner.export.LoraAdapters;
import dev.crucible.runner.export.ModelCard;
import dev.crucible.runner.export.gguf.GgufType;
import dev.crucible.runner.finetune.DemoModel;
import dev.crucible.runner.plugins.Discovered;
import dev.crucible.runner.prompts.PromptLoader;
import dev.crucible.runner.prompts.PromptSourceSpec;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import dev.crucible.runner.study.OnExisting;
import dev.crucible.runner.study.Study;
import dev.crucible.runner.study.StudyHeader;
import dev.crucible.runner.study.StudyJournal;
import dev.crucible.runner.study.StudyLock;
import dev.crucible.runner.study.TpeSampler;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code runner abliterate}: the method of docs/abliteration-method.md end to end. Settings come from flags,
 * {@code CRUCIBLE_*} variables, {@code config.toml} and defaults (in that order); the flags are generated from
 * the settings table so they can never drift from the config keys.
 */
@Command(name = "abliterate", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Find refusal directions, search edit parameters with multi-objective TPE (refusals vs KL "
                + "divergence), journal every trial, print the Pareto front, and export a chosen trial.",
                "Without --model it runs on the embedded demo model with the bundled prompt sets.",
                "Every setting is also a config.toml key and a CRUCIBLE_<KEY> variable (see config.example.toml)."})
public final class AbliterateCommand implements Callable<Integer> {
    /** Where studies go without --study, relative to the working directory (ignored by the checkout's .gitignore). */
    static final String DEFAULT_STUDIES_FOLDER = "studies";
    private static final Map<Setting, String> HELP = new LinkedHashMap<>();

    static {
        HELP.put(Setting.MODEL, "A model folder or org/name[@revision] (default: the embedded demo model).");
        HELP.put(Setting.DEVICE, "auto, cpu, cuda, cuda:N, xla, tpu, mps or xpu (default: auto).");
        HELP.put(Setting.DTYPE, "auto, float32, bfloat16 or float16 (default: auto).");
        HELP.put(Setting.THREADS, "CPU compute threads; 0 = one per core (default).");
        HELP.put(Setting.QUANTIZATION, "Keep projection weights as none, int8, int4 or nf4 during the study; the edits "
                + "start from the quantized rows, exports stay full precision (default: none).");
        HELP.put(Setting.QUANT_SCHEME, "per-channel, blockwise or asymmetric (default: per-channel for int8, blockwise for int4 and nf4).");
        HELP.put(Setting.QUANT_BLOCK_SIZE, "Weights per scale for blockwise and asymmetric (default: 32 for int4, 128 for int8, 64 for nf4).");
        HELP.put(Setting.QUANT_EXCLUDE, "Weights kept in full precision, names or globs (default: lm_head,model.embed_tokens; none for nothing).");
        HELP.put(Setting.HEADLESS, "Never ask: every question takes its flag's answer or its default.");
        HELP.put(Setting.SEED, "Seed of the whole study (default: random, printed).");
        HELP.put(Setting.N_TRIALS, "Trials in the study (default: 200).");
        HELP.put(Setting.N_STARTUP_TRIALS, "Startup trials, a Latin hypercube over the space, before TPE takes over (default: 60).");
        HELP.put(Setting.N_CANDIDATES, "TPE candidates per step (default: 128).");
        HELP.put(Setting.MAX_RESPONSE_LENGTH, "Tokens generated per scored response (default: 100).");
        HELP.put(Setting.BATCH_SIZE, "Prompts per batch; 0 = the backend chooses (default).");
        HELP.put(Setting.ROW_NORMALIZATION, "none, pre or full (default: full).");
        HELP.put(Setting.WINSORIZATION_QUANTILE, "Clamp residuals to this quantile of their magnitudes; 1 = off (default).");
        HELP.put(Setting.ORTHOGONALIZE, "Orthogonalize directions against the harmless mean (default: true).");
        HELP.put(Setting.DIRECTION_SCOPES, "Scopes the optimizer may use: global,per_layer (default: both).");
        HELP.put(Setting.LORA_RANK, "Rank of the adapter in full row normalization (default: 3).");
        HELP.put(Setting.GOOD_PROMPTS, "Harmless training prompts, e.g. data.csv:prompt[:400] (default: bundled).");
        HELP.put(Setting.BAD_PROMPTS, "Harmful training prompts (default: bundled).");
        HELP.put(Setting.GOOD_TEST_PROMPTS, "Harmless evaluation prompts (default: bundled).");
        HELP.put(Setting.BAD_TEST_PROMPTS, "Harmful evaluation prompts (default: bundled).");
        HELP.put(Setting.SYSTEM_PROMPT, "System prompt of every set (default: You are a helpful assistant.).");
        HELP.put(Setting.TRUNCATE_PROMPTS, "Cut a prompt too long for the model's context: left drops its start, right its end (default: none = refuse it).");
        HELP.put(Setting.RESPONSE_PREFIX, "Text after the generation prompt; auto detects a thought block (default).");
        HELP.put(Setting.MAX_KL, "Largest KL divergence --trial best accepts (default: 0.5).");
        HELP.put(Setting.STUDY_DIR, "Study folder (default: studies/<model name>).");
        HELP.put(Setting.ON_EXISTING, "continue, restart or exit when the study exists (default: ask; headless: continue).");
        HELP.put(Setting.EXPORT_FORMAT, "merged or adapter, for --export-dir (default: merged).");
        HELP.put(Setting.EXPORT_DIR, "Export folder (same as --export / --export-adapter).");
        HELP.put(Setting.EXPORT_TRIAL, "Trial number to export (same as --trial N).");
        HELP.put(Setting.MAX_SHARD_SIZE, "Largest safetensors shard on export, e.g. 5GB (default).");
    }

    private final Host host;

    @Spec
    CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE", order = -10,
            description = "Settings file (default: ./config.toml when present, or $CRUCIBLE_CONFIG).")
    Path config;

    @Option(names = "--trial", paramLabel = "N|best",
            description = "The trial to export: a number, or best = on the front, fewest refusals with KL at most --max-kl (ties: lower KL).")
    String trial;

    @Option(names = "--export", paramLabel = "DIR", description = "Write the chosen trial as a merged Hugging Face model folder.")
    Path export;

    @Option(names = "--export-adapter", paramLabel = "DIR", description = "Write the chosen trial as a PEFT adapter folder.")
    Path exportAdapter;

    @Option(names = "--export-gguf", paramLabel = "FILE", description = "Also (or only) write the chosen trial as a GGUF file for llama.cpp.")
    Path exportGguf;

    @Option(names = "--gguf-type", defaultValue = "f16", paramLabel = "T",
            description = "Type of --export-gguf's matrices: f32, f16, bf16, q8_0, q4_0, q4_k_m or q6_k (default: ${DEFAULT-VALUE}).")
    String ggufType;

    @Option(names = "--force", description = "Replace export folders that exist.")
    boolean force;

    @Option(names = "--json", description = "At the end print one JSON object: base scores, every trial, the front, the chosen trial.")
    boolean json;

    AbliterateCommand(Host host) {
        this.host = host;
    }

    /** Adds one option per setting that has a flag; called once when the command line is built. */
    public static void addSettingOptions(CommandSpec command) {
        for (Setting setting : Setting.values()) {
            setting.flag().filter(flag -> !command.optionsMap().containsKey(flag)).ifPresent(flag -> {
                OptionSpec.Builder option = OptionSpec.builder(flag).type(String.class)
                        .description(HELP.getOrDefault(setting, "config key " + setting.key()) + " [" + setting.envName() + "]")
                        .paramLabel(setting.key().toUpperCase(Locale.ROOT));
                if (setting == Setting.HEADLESS || setting == Setting.ORTHOGONALIZE) {
                    option.arity("0..1").fallbackValue("true");
                }
                command.addOption(option.build());
            });
        }
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        // In --json mode stdout carries only the final object; everything a person reads goes to stderr.
        PrintWriter log = json ? err : out;
        AbliterationSettings settings = loadSettings(Map.of());
        Optional<Path> exportDir = exportTarget(settings);
        ExportFormat exportFormat = exportAdapter != null || (export == null && settings.exportFormat() == ExportFormat.ADAPTER)
                ? ExportFormat.ADAPTER : ExportFormat.MERGED;
        exportDir.ifPresent(this::checkExportTarget);
        GgufType gguf = GgufType.parse(ggufType, "--gguf-type");
        List<ScorerInstance> scorers = scorers(settings.scorers());
        Abliterator.Prompts prompts = loadPrompts(settings);
        String modelSpec = settings.model().orElseGet(() -> DemoModel.require(host.environment()).toString());
        ModelLocator.Located located = ModelSession.locateModel(host, modelSpec);
        Path modelDir = located.folder();
        Path studyDir = settings.studyDir().orElse(Path.of(DEFAULT_STUDIES_FOLDER, folderName(modelDir)));
        // Everything that can refuse the run does so before any work: the export's location with the space it will
        // need and the chat template it will copy, then the study's lock (another run on it, a read-only folder).
        if (exportDir.isPresent() && exportFormat == ExportFormat.MERGED) {
            BaseFiles base = BaseFiles.of(modelDir);
            base.checkChatTemplates();
            OutputLocation.checkNewFolder(exportDir.get(), force, base.exportBytes());
        }
        if (exportGguf != null) {
            OutputLocation.checkNewFile(exportGguf, force, BaseFiles.of(modelDir).weightBytes());
        }
        Optional<Interactive> person = Interactive.of(host.environment().terminal(), settings.headless(), log);
        AtomicBoolean stop = new AtomicBoolean();
        try (StudyLock studyLock = StudyLock.acquire(studyDir)) {
            StudyStart start = StudyStart.find(studyDir, settings.onExisting(), person);
            boolean exportsATrial = (exportDir.isPresent() || exportGguf != null) && (trial != null || settings.exportTrial().isPresent());
            Map<String, Object> fromStudy = start.overrides(settings, exportsATrial);
            if (!fromStudy.isEmpty()) {
                settings = loadSettings(fromStudy);
            }
            log.println(settings.seedGenerated()
                    ? "seed " + settings.seed() + " (drawn at random; pass --seed " + settings.seed() + " to repeat this run)"
                    : "seed " + settings.seed() + (fromStudy.containsKey(Setting.SEED.key()) ? " (the study's)" : ""));
            log.println("model " + modelSpec);
            StudyCache cache = StudyCache.in(studyDir);
            StudyCache.Inputs inputs = StudyCache.Inputs.of(modelDir, prompts, cache.earlierModelFiles());
            start.checkInputs(cache, inputs);
            return run(settings, studyLock, start, cache, inputs, prompts, scorers, located, exportDir, exportFormat, gguf, person,
                    stop, out, log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private int run(AbliterationSettings settings, StudyLock studyLock, StudyStart start, StudyCache cache, StudyCache.Inputs inputs,
                    Abliterator.Prompts prompts, List<ScorerInstance> scorers, ModelLocator.Located located, Optional<Path> exportDir,
                    ExportFormat exportFormat, GgufType gguf, Optional<Interactive> person, AtomicBoolean stop, PrintWriter out,
                    PrintWriter log) throws IOException {
        boolean exporting = exportDir.isPresent() || exportGguf != null;
        Path studyDir = start.dir();
        Path modelDir = located.folder();
        try (ModelSession session = ModelSession.open(host, DeviceRequest.parse(settings.device()), threads(settings), located, settings.dtype(),
                settings.quantization());
             Interrupts interrupts = Interrupts.install(stop, log)) {
            log.println("device " + session.backend().id() + ", " + session.model().dtype().userName() + ", "
                    + session.config().numLayers() + " layers");
            session.quantizationReport().forEach(log::println);
            StudyCache.Key key = new StudyCache.Key(inputs, StudyStart.computation(settings, session));
            Optional<StudyCache.Prepared> earlier = cache.lookup(key);
            earlier.ifPresent(p -> log.println("directions and base model outputs: from " + cache.file()));
            String prefix = earlier.map(StudyCache.Prepared::responsePrefix).orElseGet(() -> responsePrefix(settings, session, prompts));
            Abliterator abliterator = new Abliterator(session, prompts, new Abliterator.Options(prefix,
                    settings.maxResponseLength(), settings.batchSize(), settings.rowNormalization(),
                    settings.loraRank(), settings.winsorizationQuantile(), settings.orthogonalize(), settings.seed(),
                    settings.truncatePrompts()));
            abliterator.encodePrompts().forEach(log::println);
            abliterator.prepare(line -> log.println("computing " + line + " ..."), earlier);
            StudyLoop loop = new StudyLoop(abliterator, scorers, stop, new SearchSpace(session.config().numLayers(),
                    settings.directionScopes().stream().map(scope -> scope.name().toLowerCase(Locale.ROOT)).toList()));
            List<Objective> objectives = scorers.stream().map(ScorerInstance::objective).toList();
            StudyHeader header = StudyHeader.of(settings.seed(), objectives, loop.space().distributions(), identity(settings, session, prefix));
            try (StudyJournal journal = openJournal(studyLock, header, start.mode(), log, spec.commandLine().getErr())) {
                Study study = new Study(objectives, new TpeSampler(new TpeSampler.Settings(settings.nStartupTrials(),
                        settings.nCandidates(), TpeSampler.Settings.DEFAULT_PRIOR_WEIGHT)), journal.header().seed());
                journal.trials().forEach(study::replay);
                if (!journal.trials().isEmpty()) {
                    log.println(study.trials().size() < settings.nTrials()
                            ? "continuing study " + studyDir + " at trial " + study.nextTrialNumber()
                            : "study " + studyDir + " has " + study.trials().size() + " trials; no more are run"
                                    + " (--trials N asks for more)");
                }
                List<Score> baselines = loop.baselines();
                keep(cache, key, abliterator.prepared(), earlier, log);
                log.println("base model: " + describe(objectives, baselines));
                boolean trialsToRun = study.trials().size() < settings.nTrials();
                if (trialsToRun) {
                    log.println(FrontReport.NOTATION);
                }
                try (TrialProgress progress = new TrialProgress(log, host.environment().terminal().redraws() && !json,
                        settings.nTrials(), study.trials().size(), objectives)) {
                    loop.run(study, journal, settings.nTrials(), progress);
                }
                if (stop.get()) {
                    log.println("stopped by Ctrl+C after " + study.trials().size() + " trials; continue later with the same --study");
                }
                List<FrozenTrial> front = study.paretoFront();
                if (!trialsToRun && !front.isEmpty()) {
                    log.println(FrontReport.NOTATION);
                }
                FrontReport.printFront(log, front, objectives);
                if (!abliterator.timings().seconds().isEmpty()) {
                    log.println("time: " + abliterator.timings());
                }
                Path plot = studyDir.resolve("pareto_front.png");
                writePlot(plot, study.trials(), front, objectives, baselines);
                log.println("plot: " + plot);

                Optional<FrozenTrial> recommended = TrialSelection.best(front, objectives, settings.maxKl());
                String modelName = folderName(modelDir);
                if (!study.trials().isEmpty()) {
                    FrontReport.printRecommendation(log, recommended, objectives, settings.maxKl(), exporting ? Optional.empty()
                            : recommended.map(t -> ExportCommandLine.of(spec.commandLine().getParseResult(), studyDir, t.number(),
                                    ExportCommandLine.freeFolder(modelName, ""))));
                }
                Optional<FrozenTrial> chosen = choose(settings, study, objectives, person, log);
                if (chosen.isPresent() && exportDir.isPresent() && !stop.get()) {
                    exportTrial(session, abliterator, chosen.get(), exportDir.get(), exportFormat, settings, baselines, objectives, log);
                }
                if (chosen.isPresent() && exportGguf != null && !stop.get()) {
                    exportGguf(session, abliterator, chosen.get(), gguf, objectives, log);
                }
                if (person.isPresent() && !exporting && !json && !stop.get() && !study.trials().isEmpty()) {
                    interrupts.close(); // in the menu, Ctrl+C quits as it does anywhere else
                    new TrialMenu(person.get(), log, study.trials(), recommended, t -> describe(objectives, t.scores()),
                            () -> ExportCommandLine.freeFolder(modelName, ""), () -> ExportCommandLine.freeFolder(modelName, "-adapter"))
                            .run(new MenuActions(session, abliterator, scorers, settings, baselines, objectives, host.environment().terminal(),
                                    (t, dir, adapter) -> {
                                        checkExportTarget(dir);
                                        exportTrial(session, abliterator, t, dir, adapter ? ExportFormat.ADAPTER : ExportFormat.MERGED, settings,
                                                baselines, objectives, log);
                                    }, out, log));
                }
                if (json) {
                    out.println(Json.write(StudyReport.of(objectives, baselines, study.trials(), front, chosen, settings)));
                }
            }
        }
        return stop.get() ? 130 : 0;
    }

    private AbliterationSettings loadSettings(Map<String, Object> fromStudy) {
        Map<String, Object> overrides = commandLineOverrides();
        overrides.putAll(fromStudy);
        return SettingsLoader.load(Optional.ofNullable(config), host.environment().env(), overrides, Path.of("").toAbsolutePath());
    }

    /** Keeps what the trials need with the study, unless it is there already; a cache that cannot be written only costs time later. */
    private static void keep(StudyCache cache, StudyCache.Key key, StudyCache.Prepared prepared, Optional<StudyCache.Prepared> earlier,
                             PrintWriter log) {
        boolean grew = earlier.isEmpty() || !earlier.get().baseResponses().keySet().equals(prepared.baseResponses().keySet())
                || !earlier.get().baseLogProbs().keySet().equals(prepared.baseLogProbs().keySet());
        if (!grew) {
            return;
        }
        try {
            cache.save(key, prepared);
        } catch (WriteFailure e) {
            log.println("warning: " + e.getMessage() + "; a later run on this study computes the directions again");
        } catch (UncheckedIOException e) {
            log.println("warning: cannot write " + cache.file() + " (" + e.getCause().getMessage()
                    + "); a later run on this study computes the directions again");
        }
    }

    /** The flags the user gave, by config key; options not given are absent so lower layers keep their say. */
    private Map<String, Object> commandLineOverrides() {
        Map<String, Object> overrides = new LinkedHashMap<>();
        CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
        for (Setting setting : Setting.values()) {
            setting.flag().filter(parsed::hasMatchedOption).ifPresent(flag -> overrides.put(setting.key(), parsed.matchedOptionValue(flag, "")));
        }
        if (trial != null && !trial.equalsIgnoreCase("best")) {
            overrides.put(Setting.EXPORT_TRIAL.key(), trial);
        }
        return overrides;
    }

    private Optional<Path> exportTarget(AbliterationSettings settings) {
        if (export != null && exportAdapter != null) {
            throw new UserInputException("give --export or --export-adapter, not both");
        }
        if (export != null) {
            return Optional.of(export);
        }
        return exportAdapter != null ? Optional.of(exportAdapter) : settings.exportDir();
    }

    /** An export that would fail at the end is refused now, before hours of work (its size is checked once the model is known). */
    private void checkExportTarget(Path dir) {
        OutputLocation.checkNewFolder(dir, force, 0);
    }

    private OptionalInt threads(AbliterationSettings settings) {
        return settings.threads() > 0 ? OptionalInt.of(settings.threads()) : OptionalInt.empty();
    }

    private List<ScorerInstance> scorers(List<ScorerSpec> specs) {
        List<ScorerInstance> out = Scorers.create(specs, host.scorers().stream().map(Discovered::service).toList());
        if (out.stream().noneMatch(s -> s.objective().direction() != Optimization.NONE)) {
            throw new UserInputException("no scorer is optimized: give at least one scorer with optimization minimize or maximize");
        }
        return out;
    }

    private Abliterator.Prompts loadPrompts(AbliterationSettings settings) {
        return new Abliterator.Prompts(group(Setting.BAD_PROMPTS, settings.badPrompts(), settings),
                group(Setting.GOOD_PROMPTS, settings.goodPrompts(), settings),
                group(Setting.BAD_TEST_PROMPTS, settings.badTestPrompts(), settings),
                group(Setting.GOOD_TEST_PROMPTS, settings.goodTestPrompts(), settings));
    }

    private Abliterator.PromptGroup group(Setting set, PromptSourceSpec source, AbliterationSettings settings) {
        return group(set, PromptLoader.load(source, Path.of("").toAbsolutePath(), host.environment().env()),
                settings.systemPromptFor(source));
    }

    /** A prompt set named as its flag names it, {@code bad-prompts}; an empty system prompt means none. */
    static Abliterator.PromptGroup group(Setting set, List<String> texts, String systemPrompt) {
        return new Abliterator.PromptGroup(set.flag().orElseThrow().substring(2), texts,
                systemPrompt.isEmpty() ? Optional.empty() : Optional.of(systemPrompt));
    }

    private static String responsePrefix(AbliterationSettings settings, ModelSession session, Abliterator.Prompts prompts) {
        String configured = settings.responsePrefix().orElse(AbliterationSettings.AUTO);
        if (!configured.equals(AbliterationSettings.AUTO)) {
            return configured;
        }
        List<String> sample = new ArrayList<>(prompts.harmfulTrain().texts().subList(0, Math.min(4, prompts.harmfulTrain().texts().size())));
        sample.addAll(prompts.harmlessTrain().texts().subList(0, Math.min(4, prompts.harmlessTrain().texts().size())));
        return ResponsePrefix.detect(session, sample, prompts.harmfulTrain().systemPrompt());
    }

    /** What must not change within a study: a continued study with other settings is refused. */
    private static Map<String, Object> identity(AbliterationSettings s, ModelSession session, String prefix) {
        Map<String, Object> id = new LinkedHashMap<>();
        id.put("model", session.modelDir().toAbsolutePath().toString());
        id.put("config_sha256", dev.crucible.runner.export.FileHashes.sha256(session.modelDir().resolve("config.json")));
        id.put("dtype", session.model().dtype().userName());
        id.put("good_prompts", s.goodPrompts().toString());
        id.put("bad_prompts", s.badPrompts().toString());
        id.put("good_test_prompts", s.goodTestPrompts().toString());
        id.put("bad_test_prompts", s.badTestPrompts().toString());
        id.put("system_prompt", s.systemPrompt());
        if (s.truncatePrompts() != PromptTruncation.NONE) {
            // Absent when off, so studies journaled before the setting existed continue.
            id.put("truncate_prompts", s.truncatePrompts().name().toLowerCase(Locale.ROOT));
        }
        id.put("response_prefix", prefix);
        id.put("max_response_length", s.maxResponseLength());
        id.put("row_normalization", s.rowNormalization().name().toLowerCase(Locale.ROOT));
        id.put("winsorization_quantile", s.winsorizationQuantile());
        id.put("orthogonalize", s.orthogonalize());
        id.put("n_startup_trials", s.nStartupTrials());
        id.put("n_candidates", s.nCandidates());
        id.put("scorers", s.scorers().stream().map(ScorerSpec::toString).toList());
        return id;
    }

    private static StudyJournal openJournal(StudyLock lock, StudyHeader header, OnExisting mode, PrintWriter log,
                                            PrintWriter err) throws IOException {
        StudyJournal journal = StudyJournal.open(lock, header, mode);
        journal.backup().ifPresent(b -> log.println("restarting: the old journal was kept as " + b));
        journal.repairedTornRecord().ifPresent(torn -> err.println("warning: study " + lock.directory() + ": line " + torn.line()
                + " of " + StudyJournal.FILE_NAME + " was cut off (a run stopped while writing trial " + torn.trial()
                + "); removed it, trial " + torn.trial() + " is run again"));
        return journal;
    }

    static String describe(List<Objective> objectives, List<Score> scores) {
        List<String> parts = new ArrayList<>();
        for (int i = 0; i < objectives.size(); i++) {
            parts.add(label(objectives.get(i).name()) + ": " + scores.get(i).display());
        }
        return String.join(", ", parts);
    }

    static String label(String instance) {
        return switch (instance) {
            case "refusals" -> "Refusals";
            case "kl_divergence" -> "KL divergence";
            default -> instance;
        };
    }

    private static void writePlot(Path file, List<FrozenTrial> trials, List<FrozenTrial> front, List<Objective> objectives,
                                  List<Score> baselines) {
        int x = index(objectives, "kl_divergence", 1);
        int y = index(objectives, "refusals", 0);
        if (objectives.size() < 2 || x == y) {
            return;
        }
        List<ParetoPlot.Point> all = trials.stream().map(t -> new ParetoPlot.Point(t.number(), t.scores().get(x).value(), t.scores().get(y).value())).toList();
        List<ParetoPlot.Point> frontPoints = front.stream().map(t -> new ParetoPlot.Point(t.number(), t.scores().get(x).value(), t.scores().get(y).value())).toList();
        ParetoPlot.write(file, "Abliteration trials: " + label(objectives.get(y).name()) + " vs " + label(objectives.get(x).name()),
                label(objectives.get(x).name()), label(objectives.get(y).name()), all, frontPoints,
                new ParetoPlot.Point(-1, baselines.get(x).value(), baselines.get(y).value()));
    }

    private static int index(List<Objective> objectives, String name, int fallback) {
        for (int i = 0; i < objectives.size(); i++) {
            if (objectives.get(i).name().equals(name)) {
                return i;
            }
        }
        return Math.min(fallback, objectives.size() - 1);
    }

    private Optional<FrozenTrial> choose(AbliterationSettings settings, Study study, List<Objective> objectives,
                                         Optional<Interactive> person, PrintWriter log) {
        if (study.trials().isEmpty()) {
            return Optional.empty();
        }
        if (trial != null && trial.equalsIgnoreCase("best")) {
            Optional<FrozenTrial> best = TrialSelection.best(study.paretoFront(), objectives, settings.maxKl());
            if (best.isEmpty()) {
                log.println("no trial on the front has KL divergence at most " + settings.maxKl() + "; raise --max-kl to choose one");
            }
            return best;
        }
        if (settings.exportTrial().isPresent()) {
            return Optional.of(TrialSelection.byNumber(study.trials(), settings.exportTrial().getAsInt()));
        }
        if ((exportTarget(settings).isPresent() || exportGguf != null) && person.isPresent()) {
            String answer = person.get().ask("export which trial? (number, best, or Enter to skip) ", "");
            if (answer.isBlank()) {
                return Optional.empty();
            }
            return answer.equalsIgnoreCase("best") ? TrialSelection.best(study.paretoFront(), objectives, settings.maxKl())
                    : Optional.of(TrialSelection.byNumber(study.trials(), TrialSelection.parseNumber(answer)));
        }
        return Optional.empty();
    }

    private void exportTrial(ModelSession session, Abliterator abliterator, FrozenTrial chosen, Path dir, ExportFormat format,
                             AbliterationSettings settings, List<Score> baselines, List<Objective> objectives, PrintWriter log) {
        AblationParameters parameters = AblationParameters.fromTrial(chosen.params());
        log.println("exporting trial " + chosen.number() + " (" + describe(objectives, chosen.scores()) + ") to " + dir + " ...");
        Map<String, LoraFactors> adapters = abliterator.adapters(parameters);
        int rank = adapters.values().stream().mapToInt(f -> (int) f.a().shape()[0]).max().orElse(1);
        Reproduction reproduction = new Reproduction(settings, chosen, objectives, baselines, session, format);
        ExportedModel model = new ExportedModel(session.location(), session.config(), BaseFiles.of(session.modelDir()),
                Optional.of(ExportWeights.merging(session, adapters)),
                Optional.of(new LoraAdapters(adapters, rank, rank, 0, List.copyOf(adapters.keySet()))),
                format == ExportFormat.MERGED ? Optional.of(modelCard(session, chosen, settings, baselines, objectives))
                        : Optional.empty(), reproduction::writeInto);
        format.writer(settings.maxShardSize()).write(model, dir, force);
        log.println("exported " + dir + " (" + (format == ExportFormat.MERGED ? "README.md describes the model; " : "")
                + "reproduce.json records settings, scores and SHA-256 of every file)");
    }

    /** The chosen trial's edit merged into the weights, written as a GGUF file. */
    private void exportGguf(ModelSession session, Abliterator abliterator, FrozenTrial chosen, GgufType type,
                            List<Objective> objectives, PrintWriter log) {
        log.println("exporting trial " + chosen.number() + " (" + describe(objectives, chosen.scores()) + ") to "
                + exportGguf + " ...");
        new ExportGguf(type, log).merged(session, ExportWeights.merging(session,
                abliterator.adapters(AblationParameters.fromTrial(chosen.params()))), exportGguf, force);
    }

    /** The export's README.md: what was done to which base, with which parameters, and what it scored. */
    private ModelCard modelCard(ModelSession session, FrozenTrial chosen, AbliterationSettings settings, List<Score> baselines,
                                List<Objective> objectives) {
        String base = session.location().reference();
        Map<String, String> parameters = new LinkedHashMap<>();
        chosen.params().forEach((name, value) -> parameters.put(name, value instanceof Double d
                ? String.format(Locale.ROOT, "%.4f", d) : String.valueOf(value)));
        parameters.put("row_normalization", settings.rowNormalization().name().toLowerCase(Locale.ROOT));
        if (settings.rowNormalization() == RowNormalization.FULL) {
            parameters.put("lora_rank", Integer.toString(settings.loraRank()));
        }
        List<ModelCard.Score> scores = new ArrayList<>();
        for (int i = 0; i < objectives.size(); i++) {
            scores.add(new ModelCard.Score(label(objectives.get(i).name()), baselines.get(i).display(), chosen.scores().get(i).display()));
        }
        String method = "Abliteration: refusal directions are taken from the residual stream at the last prompt position "
                + "(harmful minus harmless means), and each layer's `o_proj` and `down_proj` are edited so that their "
                + "outputs lose those directions, with the strengths below; the edit is merged into the weights, and "
                + "every other tensor is the base's, byte for byte. The parameters are trial " + chosen.number()
                + " of a multi-objective TPE search (seed " + settings.seed() + ") that minimizes refusals and the KL "
                + "divergence from the base.";
        List<String> arguments = spec.commandLine().getParseResult().originalArgs();
        return new ModelCard(session.location(), "`" + base + "` with its refusals abliterated by Crucible (trial " + chosen.number() + ").",
                method, parameters, scores, ModelCard.commandLine("runner", arguments),
                "`" + Reproduction.FILE_NAME + "` records every setting (the seed too), the scores, the environment and the "
                        + "SHA-256 of every file: a study with those settings on the same machine writes the same weights.",
                List.of("abliterated"));
    }

    static String folderName(Path modelDir) {
        Path name = modelDir.toAbsolutePath().normalize().getFileName();
        // A hub snapshot folder is a commit hash: name the study after the repository instead.
        if (name != null && name.toString().matches("[0-9a-f]{40}") && modelDir.toAbsolutePath().normalize().getParent() != null) {
            Path repo = modelDir.toAbsolutePath().normalize().getParent().getParent();
            if (repo != null) {
                return repo.getFileName().toString().replaceFirst("^models--", "");
            }
        }
        return name == null ? "model" : name.toString();
    }
}
