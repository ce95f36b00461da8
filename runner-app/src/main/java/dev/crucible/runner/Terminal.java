package dev.crucible.runner;

import java.io.Console;
import java.util.Map;

/**
 * The person at the keyboard, when there is one: whether the run may ask questions and redraw a line in place, and
 * the lines typed. Part of the {@link RunnerEnvironment} so that tests can script a session.
 */
public interface Terminal {
    /** No terminal (a pipe, a log file, CI): nothing is asked and nothing is redrawn. */
    Terminal NONE = new Terminal() {
        @Override
        public boolean interactive() {
            return false;
        }

        @Override
        public boolean redraws() {
            return false;
        }

        @Override
        public String readLine() {
            return null;
        }
    };

    /** Standard input and output are a terminal, so a person can answer questions. */
    boolean interactive();

    /** Standard output is a terminal that understands a carriage return, so a status line can be redrawn in place. */
    boolean redraws();

    /** The next line typed, without its line break; null at the end of input. */
    String readLine();

    /** The process's console when standard input and output are a terminal, else {@link #NONE}. */
    static Terminal system(Map<String, String> env) {
        Console console = System.console();
        if (console == null || !console.isTerminal()) {
            return NONE;
        }
        // Emacs' shell and similar set TERM=dumb: they show a carriage return as a character, not as a redraw.
        boolean redraws = !"dumb".equals(env.get("TERM"));
        return new Terminal() {
            @Override
            public boolean interactive() {
                return true;
            }

            @Override
            public boolean redraws() {
                return redraws;
            }

            @Override
            public String readLine() {
                return console.readLine();
            }
        };
    }
}
