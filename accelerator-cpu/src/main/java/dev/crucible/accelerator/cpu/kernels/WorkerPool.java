package dev.crucible.accelerator.cpu.kernels;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * Runs the tasks of one kernel call on the calling thread and a few helper threads. Tasks are taken from a shared
 * counter, not assigned up front, so a helper the operating system has descheduled (this is a machine shared with
 * other work) delays the call by at most one task: the caller takes whatever is left. Between calls helpers spin a
 * short while, since a decode step issues hundreds of kernels microseconds apart and waking a parked thread costs
 * more than that, then park so an idle pool costs nothing.
 *
 * <p>One caller at a time (the decoding thread); calls do not nest.
 */
final class WorkerPool {
    /** How long an idle helper keeps spinning for the next call before it parks. */
    private static final long SPIN_NANOS = 200_000;

    private final Thread[] helpers;
    private volatile Job job;
    private volatile boolean closed;

    WorkerPool(int threads) {
        helpers = new Thread[Math.max(0, threads - 1)];
        for (int i = 0; i < helpers.length; i++) {
            helpers[i] = Thread.ofPlatform().daemon().name("crucible-cpu-kernel-" + (i + 1)).unstarted(this::help);
            helpers[i].start();
        }
    }

    int threads() {
        return helpers.length + 1;
    }

    /** Runs {@code body} for every task index in {@code [0, tasks)} and returns when all are done. */
    void run(int tasks, IntConsumer body) {
        if (helpers.length == 0 || tasks == 1) {
            for (int task = 0; task < tasks; task++) {
                body.accept(task);
            }
            return;
        }
        Job current = new Job(tasks, body);
        job = current;
        for (Thread helper : helpers) {
            LockSupport.unpark(helper);
        }
        current.work();
        while (current.done.get() < tasks) {
            Thread.onSpinWait();
        }
        job = null;
        Throwable failure = current.failure.get();
        if (failure instanceof RuntimeException e) {
            throw e;
        }
        if (failure instanceof Error e) {
            throw e;
        }
    }

    private void help() {
        Job last = null;
        while (!closed) {
            Job current = job;
            if (current != null && current != last) {
                current.work();
                last = current;
                continue;
            }
            long idleSince = System.nanoTime();
            while (job == current && System.nanoTime() - idleSince < SPIN_NANOS) {
                Thread.onSpinWait();
            }
            if (job == current) {
                LockSupport.parkNanos(this, 10_000_000L);
            }
        }
    }

    void close() {
        closed = true;
        for (Thread helper : helpers) {
            LockSupport.unpark(helper);
        }
    }

    private static final class Job {
        final int tasks;
        final IntConsumer body;
        final AtomicInteger next = new AtomicInteger();
        final AtomicInteger done = new AtomicInteger();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        Job(int tasks, IntConsumer body) {
            this.tasks = tasks;
            this.body = body;
        }

        void work() {
            int task;
            while ((task = next.getAndIncrement()) < tasks) {
                try {
                    body.accept(task);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    done.incrementAndGet();
                }
            }
        }
    }
}
