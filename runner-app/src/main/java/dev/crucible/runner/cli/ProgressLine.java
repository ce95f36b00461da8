package dev.crucible.runner.cli;

import java.time.Duration;
import java.util.Locale;

/**
 * A progress bar as one line of text ({@code [#####---------------] 12/200   6%  5.5 s/trial  ETA 1:02:03}),
 * short enough to fit an 80-column terminal with what follows it, so redrawing it in place never wraps.
 */
final class ProgressLine {
    private static final int WIDTH = 20;

    private ProgressLine() {
    }

    static String render(int done, int total, Duration eta, double secondsPerStep) {
        return render(done, total) + String.format(Locale.ROOT, "  %.1f s/trial  ETA %s", secondsPerStep, clock(eta));
    }

    /** The bar and the count alone, before there is a time to go by. */
    static String render(int done, int total) {
        int filled = total == 0 ? WIDTH : (int) Math.round((double) WIDTH * Math.min(done, total) / total);
        return String.format(Locale.ROOT, "[%s%s] %d/%d %3d%%", "#".repeat(filled), "-".repeat(WIDTH - filled), done, total,
                total == 0 ? 100 : 100 * Math.min(done, total) / total);
    }

    static String clock(Duration d) {
        long s = Math.max(0, d.toSeconds());
        return String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
    }
}
