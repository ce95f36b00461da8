package dev.crucible.runner.cli;

import dev.crucible.runner.Terminal;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/** A person at a terminal who types {@code lines}, one per question, then ends the input. */
final class ScriptedTerminal implements Terminal {
    private final Deque<String> lines;
    private final boolean redraws;

    ScriptedTerminal(boolean redraws, List<String> lines) {
        this.redraws = redraws;
        this.lines = new ArrayDeque<>(lines);
    }

    @Override
    public boolean interactive() {
        return true;
    }

    @Override
    public boolean redraws() {
        return redraws;
    }

    @Override
    public synchronized String readLine() {
        return lines.pollFirst();
    }

    /** Lines not read yet. */
    synchronized List<String> unread() {
        return List.copyOf(lines);
    }
}
