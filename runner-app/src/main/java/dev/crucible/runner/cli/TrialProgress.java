package dev.crucible.runner.cli;

import dev.crucible.runner.abliterate.AblationParameters;
import dev.crucible.runner.abliterate.StudyLoop;
import dev.crucible.runner.bench.ProcessMemory;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;

/**
 * What a person sees while trials run: one line per finished trial and a progress bar with ETA and resident
 * memory. On a terminal the bar is one line, redrawn in place under the trial lines; in a pipe or a log file
 * nothing is redrawn (carriage returns would litter it) and the bar is a line of its own every {@link #LOG_EVERY}
 * trials and after the last.
 *
 * <p>The progress bar library the fine-tuning bar uses (me.tongfei:progressbar) is not used here: it has no way to
 * print a line above its bar, and its refresh thread redraws at any moment, tearing the trial lines apart. This
 * class owns every write between the first trial and the last, so it clears and redraws the bar itself.
 */
final class TrialProgress implements StudyLoop.Listener, AutoCloseable {
    static final int LOG_EVERY = 10;

    private final PrintWriter log;
    private final boolean redraw;
    private final int target;
    private final int already;
    private final List<Objective> objectives;
    private final long start = System.nanoTime();
    private int done;
    /** The bar as last drawn on the terminal, "" when none is on screen. */
    private String shown = "";

    /**
     * @param redraw  redraw the bar in place (a terminal) rather than print it as lines
     * @param already trials the study had before this run
     */
    TrialProgress(PrintWriter log, boolean redraw, int target, int already, List<Objective> objectives) {
        this.log = log;
        this.redraw = redraw;
        this.target = target;
        this.already = already;
        this.done = already;
        this.objectives = objectives;
    }

    @Override
    public synchronized void trialStarted(int number, AblationParameters parameters) {
        if (redraw && shown.isEmpty()) {
            draw(ProgressLine.render(done, target) + "  trial " + number + " running");
        }
    }

    @Override
    public synchronized void trialFinished(FrozenTrial trial, AblationParameters parameters) {
        done++;
        String line = "[Trial " + trial.number() + "] " + AbliterateCommand.describe(objectives, trial.scores()) + "  (" + parameters + ")";
        if (redraw) {
            clear();
            log.println(line);
            draw(bar());
        } else {
            log.println(line);
            if ((done - already) % LOG_EVERY == 0 || done >= target) {
                log.println(bar());
            }
        }
        log.flush();
    }

    private String bar() {
        double perTrial = (System.nanoTime() - start) / 1e9 / Math.max(1, done - already);
        Duration eta = Duration.ofSeconds(Math.round(perTrial * Math.max(0, target - done)));
        return ProgressLine.render(done, target, eta, perTrial)
                + ProcessMemory.residentBytes().stream().mapToObj(b -> "  RSS " + DevicesCommand.gib(b)).findFirst().orElse("");
    }

    /** Draws {@code text} over the bar on screen, blanking what is left of a longer one. */
    private void draw(String text) {
        log.print("\r" + text + " ".repeat(Math.max(0, shown.length() - text.length())));
        log.flush();
        shown = text;
    }

    private void clear() {
        if (!shown.isEmpty()) {
            log.print("\r" + " ".repeat(shown.length()) + "\r");
            shown = "";
        }
    }

    /** Leaves the last bar on screen and ends its line. */
    @Override
    public synchronized void close() {
        if (!shown.isEmpty()) {
            log.println();
            shown = "";
        }
        log.flush();
    }
}
