package dev.crucible.huggingface.template;

import java.time.Clock;

/** What one render owns: the output being written, the clock behind {@code strftime_now}, the call depth. */
final class RenderState {

    /** Deep enough for any real template, shallow enough to fail before the Java stack does. */
    private static final int MAX_CALL_DEPTH = 200;

    final Clock clock;
    StringBuilder out;
    private int callDepth;

    RenderState(Clock clock, int capacity) {
        this.clock = clock;
        this.out = new StringBuilder(capacity);
    }

    /** Runs {@code body} with a fresh output buffer and returns what it wrote (macros, set blocks, caller()). */
    String capture(Runnable body) {
        if (callDepth >= MAX_CALL_DEPTH) {
            throw ChatTemplateException.runtime("RecursionError", "maximum recursion depth exceeded");
        }
        StringBuilder saved = out;
        out = new StringBuilder();
        callDepth++;
        try {
            body.run();
            return out.toString();
        } finally {
            out = saved;
            callDepth--;
        }
    }
}
