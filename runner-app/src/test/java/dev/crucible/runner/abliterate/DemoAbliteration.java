package dev.crucible.runner.abliterate;

import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.scoring.Score;
import dev.crucible.api.scoring.ScoringContext;
import dev.crucible.runner.Host;
import dev.crucible.runner.RunnerEnvironment;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.prompts.PromptSourceSpec;
import dev.crucible.runner.abliterate.config.Setting;
import dev.crucible.runner.abliterate.config.SettingsLoader;
import dev.crucible.runner.evaluation.ScorerInstance;
import dev.crucible.runner.evaluation.Scorers;
import dev.crucible.runner.plugins.Discovered;
import dev.crucible.runner.prompts.PromptLoader;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.study.Objective;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The objective of the default {@code runner abliterate --seed SEED} on the demo model, for any parameter point:
 * the same settings, prompt sets, scorers and experiment the command builds (from the defaults, no config file),
 * minus the study. Losses are the scorers' values in their order: refusals / 100, then KL divergence.
 */
public final class DemoAbliteration implements AutoCloseable {
    private final Host host;
    private final ModelSession session;
    private final Abliterator abliterator;
    private final List<ScorerInstance> scorers = new ArrayList<>();
    private final SearchSpace space;
    private final List<Score> baselines;

    public DemoAbliteration(Path repositoryRoot, long seed) {
        Path workingDir = repositoryRoot.resolve("target"); // no config.toml there: the defaults, as on a fresh checkout
        AbliterationSettings settings = SettingsLoader.load(Optional.empty(), Map.of(),
                Map.of("seed", Long.toString(seed)), workingDir);
        host = new Host(new RunnerEnvironment(Map.of(), Optional.empty()), DemoAbliteration.class.getClassLoader());
        session = ModelSession.open(host, DeviceRequest.parse(settings.device()), OptionalInt.empty(),
                repositoryRoot.resolve("demo-model").toString(), settings.dtype(),
                settings.quantization());
        Abliterator.Prompts prompts = new Abliterator.Prompts(group(Setting.BAD_PROMPTS, settings.badPrompts(), settings, workingDir),
                group(Setting.GOOD_PROMPTS, settings.goodPrompts(), settings, workingDir),
                group(Setting.BAD_TEST_PROMPTS, settings.badTestPrompts(), settings, workingDir),
                group(Setting.GOOD_TEST_PROMPTS, settings.goodTestPrompts(), settings, workingDir));
        List<String> sample = new ArrayList<>(prompts.harmfulTrain().texts().subList(0, 4));
        sample.addAll(prompts.harmlessTrain().texts().subList(0, 4));
        String prefix = settings.responsePrefix().filter(p -> !p.equals(AbliterationSettings.AUTO))
                .orElseGet(() -> ResponsePrefix.detect(session, sample, prompts.harmfulTrain().systemPrompt()));
        abliterator = new Abliterator(session, prompts, new Abliterator.Options(prefix, settings.maxResponseLength(),
                settings.batchSize(), settings.rowNormalization(), settings.loraRank(), settings.winsorizationQuantile(),
                settings.orthogonalize(), settings.seed(), settings.truncatePrompts()));
        abliterator.prepare(line -> { });
        scorers.addAll(Scorers.create(settings.scorers(), host.scorers().stream().map(Discovered::service).toList()));
        space = new SearchSpace(session.config().numLayers(),
                settings.directionScopes().stream().map(scope -> scope.name().toLowerCase(Locale.ROOT)).toList());
        baselines = new StudyLoop(abliterator, scorers, new AtomicBoolean(), space).baselines();
    }

    /** A prompt set named as the command names it (its flag, {@code bad-prompts}). */
    private static Abliterator.PromptGroup group(Setting set, PromptSourceSpec source, AbliterationSettings settings, Path workingDir) {
        String system = settings.systemPromptFor(source);
        return new Abliterator.PromptGroup(set.flag().orElseThrow().substring(2), PromptLoader.load(source, workingDir, Map.of()),
                system.isEmpty() ? Optional.empty() : Optional.of(system));
    }

    public SearchSpace space() {
        return space;
    }

    public List<Objective> objectives() {
        return scorers.stream().map(ScorerInstance::objective).toList();
    }

    public List<Score> baselines() {
        return baselines;
    }

    /** The scores of the edit a trial with these parameters (names as in the study journal) makes. */
    public double[] evaluate(Map<String, Object> params) {
        return score(apply(params));
    }

    /** Makes the edit of a trial with these parameters; the outputs it returns are computed when first read. */
    public ScoringContext apply(Map<String, Object> params) {
        return abliterator.apply(AblationParameters.fromTrial(params));
    }

    /** The scorers' values on {@code context}, in their order. */
    public double[] score(ScoringContext context) {
        return scorers.stream().mapToDouble(s -> s.scorer().score(context).value()).toArray();
    }

    /** The unedited model's outputs. */
    public ScoringContext base() {
        return abliterator.baseContext();
    }

    @Override
    public void close() {
        session.close();
        host.close();
    }
}
