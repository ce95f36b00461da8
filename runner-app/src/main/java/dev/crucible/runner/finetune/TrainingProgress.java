package dev.crucible.runner.finetune;

import java.io.PrintWriter;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.time.Duration;
import java.util.Locale;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.DelegatingProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarConsumer;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * The progress bar: tokens done of the plan's total, tokens per second and ETA (computed by the progressbar
 * library from the bar's own clock), and the step, epoch and latest loss as its message. On a terminal it
 * redraws one line; elsewhere (logs, tests) it prints a line every ten seconds and a last one at the end.
 */
public final class TrainingProgress implements FinetuneLoop.Listener, AutoCloseable {

    private final ProgressBar bar;

    /**
     * @param startTokens tokens of the steps a resumed run has already done (the bar starts there)
     * @param terminal    redraw in place on the process's console rather than print lines to {@code err}
     */
    public TrainingProgress(long totalTokens, long startTokens, boolean terminal, PrintWriter err) {
        ProgressBarConsumer consumer = terminal
                ? new ConsoleProgressBarConsumer(System.err)
                : new DelegatingProgressBarConsumer(line -> {
                    err.println(line.strip());
                    err.flush();
                }, 160);
        this.bar = new ProgressBarBuilder()
                .setTaskName("finetune")
                .setInitialMax(totalTokens)
                .setUnit(" tok", 1)
                .showSpeed(new DecimalFormat("#,##0", DecimalFormatSymbols.getInstance(Locale.ROOT)))
                .setStyle(ProgressBarStyle.ASCII)
                .setUpdateIntervalMillis(terminal ? 500 : 10_000)
                .setConsumer(consumer)
                .startsFrom(startTokens, Duration.ZERO)
                .build();
    }

    @Override
    public void stepped(StepReport report) {
        bar.stepBy(report.tokens());
        bar.setExtraMessage(String.format(Locale.ROOT, " step %d/%d, epoch %d, loss %.4f", report.step(),
                report.totalSteps(), report.epoch() + 1, report.loss()));
    }

    @Override
    public void close() {
        bar.close();
    }
}
