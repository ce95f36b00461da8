package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.Command;

/** Command-line typos as a user makes them: one line naming the unknown option or command and the near one, exit 2. */
class UsageErrorsTest {

    private static void assertOneLine(String expected, String... args) {
        RunnerCli r = RunnerCli.run(args);
        assertEquals(2, r.exit(), r.err());
        assertEquals("", r.out());
        assertEquals(expected + "\n", r.err());
    }

    @Test
    void aMisspeltOptionIsNamedWithTheNearOneNotItsValue() {
        assertOneLine("error: unknown option '--trails' (did you mean '--trials'?) (see 'runner abliterate --help')",
                "abliterate", "--trails", "3");
        assertOneLine("error: unknown option '--trails' (did you mean '--trials'?) (see 'runner abliterate --help')",
                "abliterate", "--trails=3");
        assertOneLine("error: unknown option '--jsn' (did you mean '--json'?) (see 'runner devices --help')", "devices", "--jsn");
        assertOneLine("error: unknown options '--trails' (did you mean '--trials'?), '--sed' (did you mean '--seed'?)"
                + " (see 'runner abliterate --help')", "abliterate", "--trails", "3", "--sed", "4");
    }

    @Test
    void theUnknownOptionWinsOverTheRequiredOneItProbablyMisspelt() {
        assertOneLine("error: unknown option '--modle' (did you mean '--model'?) (see 'runner generate --help')",
                "generate", "--modle", "x", "--prompt", "hi");
    }

    @Test
    void aFarOffNameGetsNoSuggestion() {
        assertOneLine("error: unknown option '--colour-scheme' (see 'runner devices --help')", "devices", "--colour-scheme");
    }

    @Test
    void aMisspeltCommandIsNamedWithTheNearOne() {
        assertOneLine("error: unknown command 'doctr' (did you mean 'doctor'?) (see 'runner --help')", "doctr");
        assertOneLine("error: unknown command 'decod' (did you mean 'decode'?) (see 'runner bench --help')", "bench", "decod");
        assertOneLine("error: unexpected argument 'extra' (see 'runner devices --help')", "devices", "extra");
    }

    @Test
    void everyCommandAnswersAnUnknownOptionWithOneLineAndExitTwo() {
        List<String> commands = commandPaths(RootCommand.class, List.of());
        assertTrue(commands.size() >= 11, commands.toString());
        for (String path : commands) {
            List<String> args = new ArrayList<>(List.of(path.split(" ")));
            args.add("--zzzz-qqqq");
            RunnerCli r = RunnerCli.run(args.toArray(String[]::new));
            assertEquals(2, r.exit(), path + ": " + r.err());
            assertEquals("error: unknown option '--zzzz-qqqq' (see 'runner " + path + " --help')\n", r.err(), path);
        }
    }

    /** Every command below {@code type}, as the words that name it ("bench decode"), read from the annotations. */
    private static List<String> commandPaths(Class<?> type, List<String> prefix) {
        List<String> paths = new ArrayList<>();
        for (Class<?> sub : type.getAnnotation(Command.class).subcommands()) {
            List<String> path = new ArrayList<>(prefix);
            path.add(sub.getAnnotation(Command.class).name());
            paths.add(String.join(" ", path));
            paths.addAll(commandPaths(sub, path));
        }
        return paths;
    }
}
