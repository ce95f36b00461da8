package dev.crucible.runner.backends;

import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.runner.plugins.Discovered;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs every backend's {@code detect()} concurrently, each bounded by a timeout, and turns a throw or a hang into
 * an unavailable probe: one broken plugin never stops the run.
 */
public final class BackendProber {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    private BackendProber() {
    }

    /** Probes all backends; the result is ordered by priority, highest first. */
    public static List<ProbedBackend> probeAll(List<Discovered<HardwareBackend<?, ?>>> backends, Duration timeout) {
        // Daemon threads: a probe that never returns must not keep the JVM alive.
        ExecutorService pool = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().name("probe-", 0).factory());
        try {
            List<Future<Probe>> futures = new ArrayList<>();
            for (Discovered<HardwareBackend<?, ?>> found : backends) {
                futures.add(pool.submit(found.service()::detect));
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            List<ProbedBackend> out = new ArrayList<>();
            for (int i = 0; i < backends.size(); i++) {
                Discovered<HardwareBackend<?, ?>> found = backends.get(i);
                out.add(new ProbedBackend(found.service(), found.origin(), await(futures.get(i), deadline, timeout)));
            }
            out.sort(Comparator.comparingInt((ProbedBackend p) -> p.backend().priority()).reversed());
            return List.copyOf(out);
        } finally {
            pool.shutdownNow();
        }
    }

    private static Probe await(Future<Probe> future, long deadlineNanos, Duration timeout) {
        try {
            Probe probe = future.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            return probe != null ? probe : Probe.unavailable("detect() returned nothing");
        } catch (TimeoutException e) {
            future.cancel(true);
            long ms = timeout.toMillis();
            return Probe.unavailable("detect() took longer than " + (ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms"));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            String message = cause.getMessage() == null ? "" : ": " + cause.getMessage().replaceAll("\\s*\\R\\s*", " ");
            return Probe.unavailable("detect() failed with " + cause.getClass().getSimpleName() + message);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Probe.unavailable("detection was interrupted");
        }
    }
}
