package dev.crucible.runner.cli;

import java.io.Console;
import java.io.PrintWriter;

/** Questions to a person at a terminal; never asked when stdin is not one (scripts, CI) or with --headless. */
final class Interactive {
    private Interactive() {
    }

    static boolean available() {
        Console console = System.console();
        return console != null && console.isTerminal();
    }

    static String ask(PrintWriter log, String question, String defaultAnswer) {
        log.print(question);
        log.flush();
        String line = System.console().readLine();
        return line == null || line.isBlank() ? defaultAnswer : line.trim();
    }
}
