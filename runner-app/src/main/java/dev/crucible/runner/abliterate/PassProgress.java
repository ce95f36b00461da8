package dev.crucible.runner.abliterate;

import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * How far a long pass over prompts got, as a line every {@link #EVERY_NANOS} at most: quiet on a small model (the
 * demo model's residual pass takes seconds), a heartbeat with an estimate of the rest on a large one (minutes).
 */
final class PassProgress {
    /** Prompts per call to the backend, between reports. */
    static final int SLICE = 64;
    static final long EVERY_NANOS = 10_000_000_000L;

    private final String what;
    private final int total;
    private final Consumer<String> progress;
    private final LongSupplier clock;
    private final long start;
    private long lastLine;
    private int done;

    /** @param clock nanoseconds, as {@link System#nanoTime} */
    PassProgress(String what, int total, Consumer<String> progress, LongSupplier clock) {
        this.what = what;
        this.total = total;
        this.progress = progress;
        this.clock = clock;
        this.start = clock.getAsLong();
        this.lastLine = start;
    }

    /** {@code prompts} more are done. */
    void done(int prompts) {
        done += prompts;
        long now = clock.getAsLong();
        if (now - lastLine < EVERY_NANOS || done >= total) {
            return;
        }
        lastLine = now;
        long elapsed = (now - start) / 1_000_000_000L;
        long left = elapsed * (total - done) / done;
        progress.accept(String.format(Locale.ROOT, "%s: %d of %d prompts done, %d:%02d elapsed, ~%d:%02d left",
                what, done, total, elapsed / 60, elapsed % 60, left / 60, left % 60));
    }
}
