package dev.crucible.runner.cli;

import java.io.PrintWriter;
import java.util.concurrent.atomic.AtomicBoolean;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * Ctrl+C during a long run: the first press asks the run to stop after the trial in flight (so the front is still
 * printed and nothing journaled is lost); a second press exits at once with status 130 (the journal is fsynced per
 * trial, so only the trial in flight is lost). The previous handler is restored on close.
 */
final class Interrupts implements AutoCloseable {
    private final SignalHandler previous;
    private final Signal signal;

    private Interrupts(Signal signal, SignalHandler previous) {
        this.signal = signal;
        this.previous = previous;
    }

    static Interrupts install(AtomicBoolean stop, PrintWriter log) {
        Signal interrupt = new Signal("INT");
        SignalHandler previous = Signal.handle(interrupt, s -> {
            if (stop.getAndSet(true)) {
                log.println();
                log.println("interrupted again: exiting now");
                log.flush();
                Runtime.getRuntime().halt(130);
            }
            log.println();
            log.println("Ctrl+C: stopping after the current trial (press again to quit at once)");
            log.flush();
        });
        return new Interrupts(interrupt, previous);
    }

    @Override
    public void close() {
        Signal.handle(signal, previous);
    }
}
