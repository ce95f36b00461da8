package dev.crucible.runner.finetune;

import java.util.concurrent.atomic.AtomicBoolean;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * Ctrl+C during training: the first SIGINT only raises the stop flag (the loop finishes its step and saves what
 * it has); the handler that was there before comes back at once, so a second Ctrl+C quits the way it always does.
 * {@code sun.misc.Signal} (module jdk.unsupported) is the JDK's supported way to handle a signal without ending
 * the process, which a shutdown hook cannot do.
 */
public final class InterruptSignal implements AutoCloseable {
    private static final Signal INT = new Signal("INT");

    private final SignalHandler previous;

    private InterruptSignal(SignalHandler previous) {
        this.previous = previous;
    }

    /**
     * Installs the handler; {@code onStop} runs (on the signal thread) when the first Ctrl+C arrives. Where the
     * JVM does not let us handle SIGINT (run with -Xrs), Ctrl+C keeps its default meaning.
     */
    public static InterruptSignal install(AtomicBoolean stop, Runnable onStop) {
        SignalHandler[] before = new SignalHandler[1];
        try {
            before[0] = Signal.handle(INT, signal -> {
                Signal.handle(INT, before[0]);
                if (!stop.getAndSet(true)) {
                    onStop.run();
                }
            });
        } catch (IllegalArgumentException | IllegalStateException e) {
            return new InterruptSignal(null);
        }
        return new InterruptSignal(before[0]);
    }

    @Override
    public void close() {
        if (previous != null) {
            Signal.handle(INT, previous);
        }
    }
}
