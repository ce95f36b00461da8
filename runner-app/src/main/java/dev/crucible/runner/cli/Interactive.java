package dev.crucible.runner.cli;

import dev.crucible.runner.Terminal;
import java.io.PrintWriter;
import java.util.Optional;

/** Questions to a person at a terminal; never asked when stdin is not one (scripts, CI) or with --headless. */
final class Interactive {
    private final Terminal terminal;
    private final PrintWriter log;

    private Interactive(Terminal terminal, PrintWriter log) {
        this.terminal = terminal;
        this.log = log;
    }

    /** Someone to ask, unless the run is headless or has no terminal. */
    static Optional<Interactive> of(Terminal terminal, boolean headless, PrintWriter log) {
        return headless || !terminal.interactive() ? Optional.empty() : Optional.of(new Interactive(terminal, log));
    }

    /** The answer, or {@code defaultAnswer} for an empty line or the end of input. */
    String ask(String question, String defaultAnswer) {
        return line(question).filter(line -> !line.isBlank()).map(String::trim).orElse(defaultAnswer);
    }

    /** The line typed after {@code question}, empty at the end of input (Ctrl+D). */
    Optional<String> line(String question) {
        log.print(question);
        log.flush();
        return Optional.ofNullable(terminal.readLine());
    }

    Terminal terminal() {
        return terminal;
    }
}
