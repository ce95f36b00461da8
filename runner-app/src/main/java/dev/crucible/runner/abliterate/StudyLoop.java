package dev.crucible.runner.abliterate;

import dev.crucible.api.scoring.Score;
import dev.crucible.api.scoring.ScoringContext;
import dev.crucible.runner.evaluation.ScorerInstance;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Study;
import dev.crucible.runner.study.StudyJournal;
import dev.crucible.runner.study.Trial;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs trials until the study holds {@code targetTrials} finished trials or a stop is requested: ask the sampler,
 * apply the edit, score it with every scorer, tell the study and append the trial to the journal (flushed and
 * fsynced, so a kill loses at most the trial in flight). A stop request is honoured between trials.
 */
public final class StudyLoop {
    /** What the loop reports as it goes. */
    public interface Listener {
        void trialStarted(int number, AblationParameters parameters);

        void trialFinished(FrozenTrial trial, AblationParameters parameters);
    }

    private final Abliterator abliterator;
    private final List<ScorerInstance> scorers;
    private final SearchSpace space;
    private final AtomicBoolean stopRequested;

    public StudyLoop(Abliterator abliterator, List<ScorerInstance> scorers, AtomicBoolean stopRequested) {
        this(abliterator, scorers, stopRequested, new SearchSpace(abliterator.numLayers()));
    }

    public StudyLoop(Abliterator abliterator, List<ScorerInstance> scorers, AtomicBoolean stopRequested, SearchSpace space) {
        this.abliterator = abliterator;
        this.scorers = List.copyOf(scorers);
        this.space = space;
        this.stopRequested = stopRequested;
    }

    public SearchSpace space() {
        return space;
    }

    /** Every scorer's baseline on the unedited model, in scorer order. */
    public List<Score> baselines() {
        ScoringContext base = abliterator.baseContext();
        List<Score> out = new ArrayList<>();
        for (ScorerInstance s : scorers) {
            out.add(s.scorer().baseline(base));
        }
        abliterator.freezeBase();
        return out;
    }

    /** Runs until the study has {@code targetTrials} trials; returns the trials this call finished. */
    public List<FrozenTrial> run(Study study, StudyJournal journal, int targetTrials, Listener listener) {
        List<FrozenTrial> finished = new ArrayList<>();
        while (study.trials().size() < targetTrials && !stopRequested.get()) {
            Trial trial = study.ask();
            AblationParameters parameters = space.suggest(trial);
            listener.trialStarted(trial.number(), parameters);
            ScoringContext context = abliterator.apply(parameters);
            List<Score> scores = new ArrayList<>();
            for (ScorerInstance s : scorers) {
                scores.add(s.scorer().score(context));
            }
            FrozenTrial done = study.tell(trial, scores);
            journal.append(done);
            finished.add(done);
            listener.trialFinished(done, parameters);
        }
        return finished;
    }
}
