package dev.crucible.runner.cli;

import com.github.freva.asciitable.AsciiTable;
import com.github.freva.asciitable.Column;
import com.github.freva.asciitable.HorizontalAlign;
import dev.crucible.api.UserInputException;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.Score;
import dev.crucible.runner.Host;
import dev.crucible.runner.abliterate.Abliterator;
import dev.crucible.runner.abliterate.EncodedPrompts;
import dev.crucible.runner.abliterate.ResponsePrefix;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.abliterate.config.Setting;
import dev.crucible.runner.abliterate.config.SettingsLoader;
import dev.crucible.runner.evaluation.ModelOutputs;
import dev.crucible.runner.evaluation.ScorerInstance;
import dev.crucible.runner.evaluation.Scorers;
import dev.crucible.runner.evaluation.Scores;
import dev.crucible.runner.evaluation.Timings;
import dev.crucible.runner.plugins.Discovered;
import dev.crucible.runner.prompts.PromptLoader;
import dev.crucible.runner.prompts.PromptSourceSpec;
import dev.crucible.runner.session.ContextBudget;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.study.Objective;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "evaluate", mixinStandardHelpOptions = true,
        description = {"Score a model with the configured scorers (default: refusals on the harmful test prompts, KL "
                + "divergence on the harmless ones), relative to a base model.",
                "Prompt sets, scorers and generation length come from config.toml / CRUCIBLE_* as for abliterate."})
public final class EvaluateCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Mixin
    DeviceOptions deviceOptions;

    @Mixin
    QuantizationOptions quantizationOptions;

    @Option(names = "--model", required = true, paramLabel = "A", description = "The model to score.")
    String model;

    @Option(names = "--base", paramLabel = "B", description = "The model to compare against (KL divergence is relative to it), always in full precision; default: A itself (with --quantization: the quantized model against full precision).")
    String base;

    @Option(names = "--config", paramLabel = "FILE", description = "Settings file (default: ./config.toml when present).")
    Path config;

    @Option(names = "--dtype", defaultValue = "auto", description = "auto, float32, bfloat16 or float16 (default: auto).")
    String dtype;

    @Option(names = "--max-response-length", paramLabel = "N", description = "Tokens per scored response (default: 100).")
    Integer maxResponseLength;

    @Option(names = "--good-test-prompts", paramLabel = "SOURCE", description = "Harmless evaluation prompts (default: bundled).")
    String goodTest;

    @Option(names = "--bad-test-prompts", paramLabel = "SOURCE", description = "Harmful evaluation prompts (default: bundled).")
    String badTest;

    @Option(names = "--truncate-prompts", paramLabel = "left|right",
            description = "Cut a prompt too long for the model's context: left drops its start, right its end (default: refuse it).")
    String truncatePrompts;

    @Option(names = "--json", description = "Print one JSON object: model, base, and per scorer the base and model values.")
    boolean json;

    EvaluateCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        QuantizationConfig quantization = quantizationOptions.config();
        Map<String, Object> overrides = new LinkedHashMap<>();
        if (maxResponseLength != null) {
            overrides.put("max_response_length", maxResponseLength.toString());
        }
        if (goodTest != null) {
            overrides.put("good_test_prompts", goodTest);
        }
        if (badTest != null) {
            overrides.put("bad_test_prompts", badTest);
        }
        if (truncatePrompts != null) {
            overrides.put("truncate_prompts", truncatePrompts);
        }
        AbliterationSettings settings = SettingsLoader.load(Optional.ofNullable(config), host.environment().env(), overrides,
                Path.of("").toAbsolutePath());
        List<ScorerInstance> scorers = Scorers.create(settings.scorers(),
                host.scorers().stream().map(Discovered::service).toList());
        Map<PromptSet, List<String>> texts = new EnumMap<>(PromptSet.class);
        texts.put(PromptSet.HARMFUL, load(settings.badTestPrompts()));
        texts.put(PromptSet.HARMLESS, load(settings.goodTestPrompts()));
        PrintWriter log = json ? spec.commandLine().getErr() : spec.commandLine().getOut();
        Timings timings = new Timings();

        String baseSpec = base != null ? base : model;
        // Both models are checked (folder, config, tokenizer and template, every tensor's name and shape) before
        // either is scored: a mistake in --model must not wait for the base's responses.
        ModelSession.Checked checkedBase = ModelSession.check(host, baseSpec, true);
        ModelSession.Checked checkedModel = base == null ? checkedBase : ModelSession.check(host, model, true);
        if (checkedModel.config().vocabSize() != checkedBase.config().vocabSize()) {
            throw new UserInputException("--model has " + checkedModel.config().vocabSize() + " vocabulary rows and --base "
                    + checkedBase.config().vocabSize() + ": KL divergence needs the same vocabulary");
        }
        List<Score> baselines = new ArrayList<>();
        ModelOutputs baseOutputs;
        log.println("scoring the base " + baseSpec + " ...");
        try (ModelSession session = deviceOptions.open(host, checkedBase.location(), dtype, QuantizationConfig.NONE)) {
            baseOutputs = outputs(session, settings, texts, timings, null, log);
            for (ScorerInstance s : scorers) {
                baselines.add(s.scorer().baseline(baseOutputs));
            }
            baseOutputs.freeze();
        }
        List<Score> scores = new ArrayList<>();
        log.println("scoring " + model + (quantization.enabled() ? " quantized" : "") + " ...");
        try (ModelSession session = deviceOptions.open(host, checkedModel.location(), dtype, quantization)) {
            quantization = session.quantization();
            session.quantizationReport().forEach(spec.commandLine().getErr()::println);
            ModelOutputs outputs = outputs(session, settings, texts, timings, baseOutputs, log);
            for (ScorerInstance s : scorers) {
                scores.add(s.scorer().score(outputs));
            }
        }
        List<Objective> objectives = scorers.stream().map(ScorerInstance::objective).toList();
        if (json) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("model", model);
            report.put("base", baseSpec);
            report.put("quantization", quantization.enabled() ? quantization.describe() : "none");
            report.put("base_scores", Scores.json(objectives, baselines));
            report.put("scores", Scores.json(objectives, scores));
            spec.commandLine().getOut().println(Json.write(report));
        } else {
            log.println(scoreTable(objectives, baselines, scores,
                    quantization.enabled() ? "model, " + quantization.method().userName() : "model"));
            log.println("time: " + timings);
        }
        return 0;
    }

    /** Each scorer's base and model values as a table; {@code modelColumn} heads the model's. */
    static String scoreTable(List<Objective> objectives, List<Score> baselines, List<Score> scores, String modelColumn) {
        String[][] rows = new String[objectives.size()][];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = new String[] {AbliterateCommand.label(objectives.get(i).name()), baselines.get(i).display(), scores.get(i).display()};
        }
        return AsciiTable.getTable(AsciiTable.BASIC_ASCII_NO_DATA_SEPARATORS, new Column[] {
            new Column().header("scorer").dataAlign(HorizontalAlign.LEFT),
            new Column().header("base").dataAlign(HorizontalAlign.RIGHT),
            new Column().header(modelColumn).dataAlign(HorizontalAlign.RIGHT)}, rows);
    }

    private List<String> load(PromptSourceSpec source) {
        return PromptLoader.load(source, Path.of("").toAbsolutePath(), host.environment().env());
    }

    private static ModelOutputs outputs(ModelSession session, AbliterationSettings settings, Map<PromptSet, List<String>> texts,
                                        Timings timings, ModelOutputs baseline, PrintWriter log) {
        String configured = settings.responsePrefix().orElse(AbliterationSettings.AUTO);
        String system = settings.systemPrompt();
        String prefix = configured.equals(AbliterationSettings.AUTO)
                ? ResponsePrefix.detect(session, texts.get(PromptSet.HARMLESS), system.isEmpty() ? Optional.empty() : Optional.of(system))
                : configured;
        ContextBudget budget = session.budget(settings.maxResponseLength(), "--max-response-length", settings.truncatePrompts());
        Map<PromptSet, List<String>> shown = new EnumMap<>(PromptSet.class);
        Map<PromptSet, List<int[]>> ids = new EnumMap<>(PromptSet.class);
        for (PromptSet set : PromptSet.values()) {
            Abliterator.PromptGroup group = AbliterateCommand.group(set == PromptSet.HARMFUL ? Setting.BAD_TEST_PROMPTS
                    : Setting.GOOD_TEST_PROMPTS, texts.get(set), system);
            EncodedPrompts encoded = EncodedPrompts.of(session, budget, group, prefix);
            encoded.cutNote(budget, group).ifPresent(log::println);
            shown.put(set, encoded.texts());
            ids.put(set, encoded.ids());
        }
        return new ModelOutputs(session, new ModelOutputs.EvaluationPrompts(shown, ids), settings.maxResponseLength(),
                settings.batchSize(), timings, baseline);
    }
}
