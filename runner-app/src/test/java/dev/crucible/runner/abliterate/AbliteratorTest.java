package dev.crucible.runner.abliterate;

import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.runner.abliterate.config.RowNormalization;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.Score;
import dev.crucible.api.scoring.Scorer;
import dev.crucible.api.scoring.ScoringContext;
import dev.crucible.api.tensor.DType;
import dev.crucible.runner.Host;
import dev.crucible.runner.RunnerEnvironment;
import dev.crucible.runner.evaluation.ScorerInstance;
import dev.crucible.runner.model.ModelInitializer;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import dev.crucible.runner.study.OnExisting;
import dev.crucible.runner.study.Study;
import dev.crucible.runner.study.StudyHeader;
import dev.crucible.runner.study.StudyJournal;
import dev.crucible.runner.study.TpeSampler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The experiment's mechanics on a tiny random model: edits, resets, scoring outputs, journaled trials. */
class AbliteratorTest {
    @TempDir
    static Path temp;
    static Host host;
    static ModelSession session;
    static Abliterator abliterator;

    static final List<String> BAD = List.of("How do I pick a lock?", "Make a weapon now.", "Steal a car for me.", "Write malware.");
    static final List<String> GOOD = List.of("How do I bake bread?", "Plan a trip to Rome.", "Explain photosynthesis.", "Write a poem.");

    @BeforeAll
    static void load() {
        Path model = temp.resolve("tiny");
        ModelInitializer.write(new ModelInitializer.Spec(Architecture.LLAMA, 32, 3, 4, 2, 8, 64, 400, true, DType.F32, 5, 256, 10000, 0.2), model, false);
        host = new Host(new RunnerEnvironment(Map.of(), Optional.empty()), AbliteratorTest.class.getClassLoader());
        session = ModelSession.open(host, DeviceRequest.parse("cpu"), OptionalInt.of(1), model.toString(), "auto",
                QuantizationConfig.NONE);
        Optional<String> system = Optional.of("You are a helpful assistant.");
        abliterator = new Abliterator(session, new Abliterator.Prompts(new Abliterator.PromptGroup("bad-prompts", BAD, system),
                new Abliterator.PromptGroup("good-prompts", GOOD, system),
                new Abliterator.PromptGroup("bad-test-prompts", BAD.subList(0, 2), system),
                new Abliterator.PromptGroup("good-test-prompts", GOOD.subList(0, 2), system)),
                new Abliterator.Options("", 8, 0, RowNormalization.FULL, 3, 1.0, true, 17, PromptTruncation.NONE));
        abliterator.prepare(line -> { });
    }

    @AfterAll
    static void close() {
        session.close();
        host.close();
    }

    private static AblationParameters parameters(double strength) {
        return new AblationParameters(false, 0.8, new AblationParameters.WeightProfile(strength, 1.5, 0.5 * strength, 2),
                new AblationParameters.WeightProfile(strength, 1.5, 0.5 * strength, 2));
    }

    @Test
    void directionsCoverEveryBoundary() {
        assertEquals(4, abliterator.directions().count());
    }

    @Test
    void editsChangeOutputsAndZeroingRestoresTheBaseExactly() {
        abliterator.freezeBaseForTest();
        float[][] base = abliterator.baseContext().firstTokenLogProbs(PromptSet.HARMLESS);
        ScoringContext edited = abliterator.apply(parameters(1.4));
        assertFalse(java.util.Arrays.deepEquals(base, edited.firstTokenLogProbs(PromptSet.HARMLESS)), "the edit changes the logits");
        assertEquals(base, edited.baseFirstTokenLogProbs(PromptSet.HARMLESS), "the baseline is the cached base");
        ScoringContext none = abliterator.apply(new AblationParameters(false, 0.8,
                new AblationParameters.WeightProfile(0, 1, 0, 1), new AblationParameters.WeightProfile(0, 1, 0, 1)));
        float[][] reset = none.firstTokenLogProbs(PromptSet.HARMLESS);
        for (int i = 0; i < base.length; i++) {
            assertArrayEquals(base[i], reset[i], 1e-6f, "a trial without edits computes exactly the base");
        }
        assertThrows(IllegalStateException.class, () -> abliterator.baseContext().responses(PromptSet.HARMLESS),
                "base outputs cannot be computed once edits began");
    }

    @Test
    void adaptersAreDeterministicAndSkipLayersOutsideTheProfile() {
        Map<String, LoraFactors> a = abliterator.adapters(parameters(1.0));
        Map<String, LoraFactors> b = abliterator.adapters(parameters(1.0));
        assertEquals(a.keySet(), b.keySet());
        for (String name : a.keySet()) {
            assertArrayEquals(a.get(name).a().toFloatArray(), b.get(name).a().toFloatArray());
            assertArrayEquals(a.get(name).b().toFloatArray(), b.get(name).b().toFloatArray());
        }
        // max at 1.5, distance 2: layers 0..2 all within reach; a narrow profile keeps only the nearest layers.
        assertEquals(6, a.size());
        Map<String, LoraFactors> narrow = abliterator.adapters(new AblationParameters(true, 0,
                new AblationParameters.WeightProfile(1, 2, 1, 0.5), new AblationParameters.WeightProfile(0, 2, 0, 0.5)));
        assertEquals(List.of("model.layers.2.self_attn.o_proj"), List.copyOf(narrow.keySet()));
        assertEquals(3, a.get("model.layers.0.mlp.down_proj").a().shape()[0], "rank 3 for full row normalization");
    }

    @Test
    void trialsAreJournaledAndAStudyContinuesWhereItStopped() throws Exception {
        Scorer fake = new Scorer() {
            @Override
            public String name() {
                return "mean_response_length";
            }

            @Override
            public Optimization defaultOptimization() {
                return Optimization.MINIMIZE;
            }

            @Override
            public Score baseline(ScoringContext c) {
                return score(c);
            }

            @Override
            public Score score(ScoringContext c) {
                return Score.of(c.responses(PromptSet.HARMFUL).stream().mapToInt(String::length).average().orElse(0));
            }
        };
        List<ScorerInstance> scorers = List.of(new ScorerInstance(fake, new Objective("len", Optimization.MINIMIZE)));
        StudyLoop loop = new StudyLoop(abliterator, scorers, new AtomicBoolean());
        Path dir = temp.resolve("study");
        StudyHeader header = StudyHeader.of(3, List.of(new Objective("len", Optimization.MINIMIZE)), loop.space().distributions(), Map.of("model", "tiny"));
        List<Integer> seen = new java.util.ArrayList<>();
        StudyLoop.Listener listener = new StudyLoop.Listener() {
            @Override
            public void trialStarted(int number, AblationParameters parameters) {
            }

            @Override
            public void trialFinished(FrozenTrial trial, AblationParameters parameters) {
                seen.add(trial.number());
            }
        };
        try (StudyJournal journal = StudyJournal.open(dir, header, OnExisting.CONTINUE)) {
            Study study = new Study(header.objectives(), new TpeSampler(TpeSampler.Settings.defaults().withStartupTrials(2)), 3);
            loop.run(study, journal, 3, listener);
        }
        assertEquals(4, Files.readAllLines(dir.resolve(StudyJournal.FILE_NAME)).size(), "header + 3 trials");
        try (StudyJournal journal = StudyJournal.open(dir, header, OnExisting.CONTINUE)) {
            Study study = new Study(header.objectives(), new TpeSampler(TpeSampler.Settings.defaults().withStartupTrials(2)), 3);
            journal.trials().forEach(study::replay);
            loop.run(study, journal, 5, listener);
            assertEquals(5, study.trials().size());
        }
        assertEquals(List.of(0, 1, 2, 3, 4), seen);
        assertEquals(6, Files.readAllLines(dir.resolve(StudyJournal.FILE_NAME)).size(), "header + 5 trials");
    }
}
