package dev.crucible.runner.cli;

import dev.crucible.runner.Main;
import dev.crucible.runner.RunnerEnvironment;
import dev.crucible.runner.Terminal;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import java.util.Optional;

/** Runs the CLI in-process and captures what a user would see. */
record RunnerCli(int exit, String out, String err) {

    static RunnerCli run(Map<String, String> env, String... args) {
        return run(env, Terminal.NONE, args);
    }

    /** As a person at {@code terminal} runs it. */
    static RunnerCli run(Map<String, String> env, Terminal terminal, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Main.run(args, new RunnerEnvironment(env, Optional.empty(), terminal), new PrintWriter(out, true), new PrintWriter(err, true));
        return new RunnerCli(exit, out.toString(), err.toString());
    }

    static RunnerCli run(String... args) {
        return run(Map.of(), args);
    }
}
