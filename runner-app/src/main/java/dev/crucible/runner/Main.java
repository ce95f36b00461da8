package dev.crucible.runner;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.cli.RootCommand;
import dev.crucible.runner.cli.UsageErrors;
import java.io.PrintWriter;
import picocli.CommandLine;

/**
 * The {@code runner} executable. Exit status: 0 success, 1 an internal error (a bug: stack trace printed),
 * 2 the user's mistake (bad flag, missing file, unavailable device: one line, no stack trace), 130 interrupted.
 */
public final class Main {
    public static final int EXIT_USAGE = 2;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, RunnerEnvironment.system(), new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /** Runs one command line; the process-independent entry point tests use. */
    public static int run(String[] args, RunnerEnvironment environment, PrintWriter out, PrintWriter err) {
        // Plugin problems are warnings on stderr, for every command, as they are found: a broken jar is skipped, and
        // the user sees why a backend is missing before a command fails for want of it.
        try (Host host = new Host(environment, Main.class.getClassLoader(), problem -> err.println("warning: " + problem),
                err::println)) {
            CommandLine cli = new CommandLine(new RootCommand(), new CommandFactory(host));
            CommandLine abliterate = cli.getSubcommands().get("abliterate");
            if (abliterate != null) {
                dev.crucible.runner.cli.AbliterateCommand.addSettingOptions(abliterate.getCommandSpec());
            }
            cli.setOut(out);
            cli.setErr(err);
            cli.setCaseInsensitiveEnumValuesAllowed(true);
            // A flag given twice takes its last value, as in most command-line tools (and handy in scripts).
            cli.setOverwrittenOptionsAllowed(true);
            cli.setParameterExceptionHandler((ex, ignoredArgs) -> {
                CommandLine command = ex.getCommandLine();
                err.println("error: " + oneLine(UsageErrors.message(ex)) + " (see '" + command.getCommandSpec().qualifiedName() + " --help')");
                return EXIT_USAGE;
            });
            cli.setExecutionExceptionHandler((ex, command, parseResult) -> {
                if (ex instanceof UserInputException) {
                    err.println("error: " + oneLine(ex.getMessage()));
                    return EXIT_USAGE;
                }
                throw ex;
            });
            return cli.execute(args);
        } catch (UserInputException e) {
            err.println("error: " + oneLine(e.getMessage()));
            return EXIT_USAGE;
        }
    }

    private static String oneLine(String message) {
        return message == null ? "" : message.replaceAll("\\s*\\R\\s*", " ");
    }

    /** Gives every command the process's {@link Host}. */
    private record CommandFactory(Host host) implements CommandLine.IFactory {
        @Override
        public <K> K create(Class<K> type) throws Exception {
            for (var constructor : type.getDeclaredConstructors()) {
                if (constructor.getParameterCount() == 1 && constructor.getParameterTypes()[0] == Host.class) {
                    constructor.setAccessible(true);
                    return type.cast(constructor.newInstance(host));
                }
            }
            return CommandLine.defaultFactory().create(type);
        }
    }
}
