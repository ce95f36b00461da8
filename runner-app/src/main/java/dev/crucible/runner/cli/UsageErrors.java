package dev.crucible.runner.cli;

import dev.crucible.runner.prompts.Suggestions;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * The one line a command-line mistake gets. Arguments no option or command took are named first, as unknown options
 * or commands with the nearest valid name: picocli's own message for {@code --trails 3} is "Unknown options:
 * '--trails', '3'" (the typo's value counted as a second unknown), its suggestions are every option sharing the
 * first two letters, and when a required option is also missing (often the misspelt one) it reports only that.
 */
public final class UsageErrors {

    private UsageErrors() {
    }

    /** The message for {@code error: ... (see 'runner X --help')}, without those parts. */
    public static String message(ParameterException e) {
        CommandLine command = e.getCommandLine();
        List<String> unmatched = command.getUnmatchedArguments();
        if (unmatched.isEmpty()) {
            return e.getMessage() == null ? "" : e.getMessage();
        }
        CommandSpec spec = command.getCommandSpec();
        Set<String> unknownOptions = new LinkedHashSet<>();
        for (String argument : unmatched) {
            if (resemblesOption(argument)) {
                unknownOptions.add(argument.contains("=") ? argument.substring(0, argument.indexOf('=')) : argument);
            }
        }
        if (!unknownOptions.isEmpty()) {
            List<String> named = new ArrayList<>();
            for (String option : unknownOptions) {
                named.add("'" + option + "'" + Suggestions.closest(option, optionNames(spec))
                        .map(near -> " (did you mean '" + near + "'?)").orElse(""));
            }
            return "unknown option" + (named.size() == 1 ? " " : "s ") + String.join(", ", named);
        }
        String first = unmatched.getFirst();
        List<String> commands = spec.subcommands().entrySet().stream()
                .filter(entry -> !entry.getValue().getCommandSpec().usageMessage().hidden())
                .map(java.util.Map.Entry::getKey).toList();
        if (!commands.isEmpty()) {
            return "unknown command '" + first + "'" + Suggestions.closest(first, commands)
                    .map(near -> " (did you mean '" + near + "'?)").orElse("");
        }
        return "unexpected argument" + (unmatched.size() == 1 ? " '" + first + "'" : "s '" + String.join("', '", unmatched) + "'");
    }

    /** A dash and a name, not a negative number (which picocli also leaves to positional parameters). */
    private static boolean resemblesOption(String argument) {
        return argument.length() > 1 && argument.startsWith("-") && !argument.matches("-[0-9.].*");
    }

    private static List<String> optionNames(CommandSpec spec) {
        List<String> names = new ArrayList<>();
        for (OptionSpec option : spec.options()) {
            if (!option.hidden()) {
                names.addAll(List.of(option.names()));
            }
        }
        return names;
    }
}
