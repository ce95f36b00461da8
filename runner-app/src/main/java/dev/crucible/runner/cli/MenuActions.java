package dev.crucible.runner.cli;

import dev.crucible.api.scoring.Score;
import dev.crucible.api.scoring.ScoringContext;
import dev.crucible.runner.Terminal;
import dev.crucible.runner.abliterate.AblationParameters;
import dev.crucible.runner.abliterate.Abliterator;
import dev.crucible.runner.abliterate.StudyLoop;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.evaluation.ScorerInstance;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What the menu after an abliteration run does with a trial, on the model the run loaded: the export the command
 * does, the chat command's conversation and the evaluate command's scores, each on the trial's edit (applied as
 * the study applied it, as adapters over the unchanged base weights).
 */
final class MenuActions implements TrialMenu.Actions {
    /** Writes a trial's export, as {@code --trial N --export DIR} does. */
    interface Exporter {
        void export(FrozenTrial trial, Path dir, boolean adapter);
    }

    private final ModelSession session;
    private final Abliterator abliterator;
    private final List<ScorerInstance> scorers;
    private final AbliterationSettings settings;
    private final List<Score> baselines;
    private final List<Objective> objectives;
    private final Terminal terminal;
    private final Exporter exporter;
    private final PrintWriter out;
    private final PrintWriter log;

    MenuActions(ModelSession session, Abliterator abliterator, List<ScorerInstance> scorers, AbliterationSettings settings,
                List<Score> baselines, List<Objective> objectives, Terminal terminal, Exporter exporter, PrintWriter out, PrintWriter log) {
        this.session = session;
        this.abliterator = abliterator;
        this.scorers = scorers;
        this.settings = settings;
        this.baselines = baselines;
        this.objectives = objectives;
        this.terminal = terminal;
        this.exporter = exporter;
        this.out = out;
        this.log = log;
    }

    @Override
    public void export(FrozenTrial trial, Path dir, boolean adapter) {
        exporter.export(trial, dir, adapter);
    }

    @Override
    public void chat(FrozenTrial trial) {
        if (session.tokenizer().chatTemplate().isEmpty()) {
            log.println("the model has no chat template, so there is no chat to have with it");
            return;
        }
        abliterator.apply(AblationParameters.fromTrial(trial.params()));
        log.println("chat with trial " + trial.number() + ": /reset clears the history, /exit or end of input goes back");
        // The system prompt the study's prompts were rendered with, so the chat sees the model the scores describe.
        String system = settings.systemPrompt().isEmpty() ? null : settings.systemPrompt();
        new ChatLoop(session, system, ChatLoop.replyTokens(session)).run(terminal::readLine, out, log);
    }

    @Override
    public void evaluate(FrozenTrial trial) {
        log.println("scoring trial " + trial.number() + " ...");
        ScoringContext context = abliterator.apply(AblationParameters.fromTrial(trial.params()));
        List<Score> scores = new ArrayList<>();
        for (ScorerInstance s : scorers) {
            scores.add(s.scorer().score(context));
        }
        log.println(EvaluateCommand.scoreTable(objectives, baselines, scores, "trial " + trial.number()));
    }
}
