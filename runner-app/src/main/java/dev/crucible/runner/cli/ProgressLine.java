package dev.crucible.runner.cli;

import java.time.Duration;
import java.util.Locale;

/**
 * A progress bar drawn as one finished line per step ({@code [#####-----] 12/200  6% ETA 1:02:03}). Trials take
 * seconds to minutes and print their own result line; a bar that redraws itself in place (as the progressbar
 * library's refresh thread does) tears those lines apart and fills log files with carriage returns.
 */
final class ProgressLine {
    private static final int WIDTH = 30;

    private ProgressLine() {
    }

    static String render(int done, int total, Duration eta, double secondsPerStep) {
        int filled = total == 0 ? WIDTH : (int) Math.round((double) WIDTH * Math.min(done, total) / total);
        return String.format(Locale.ROOT, "[%s%s] %d/%d %3d%%  %.1f s/trial  ETA %s",
                "#".repeat(filled), "-".repeat(WIDTH - filled), done, total,
                total == 0 ? 100 : 100 * Math.min(done, total) / total, secondsPerStep, clock(eta));
    }

    static String clock(Duration d) {
        long s = Math.max(0, d.toSeconds());
        return String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
    }
}
