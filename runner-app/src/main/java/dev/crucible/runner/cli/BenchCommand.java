package dev.crucible.runner.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure speed against this machine's ceilings.",
        subcommands = {BenchDecodeCommand.class})
public final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        // A benchmark must be named: show what there is and exit 2, like the root command.
        spec.commandLine().usage(spec.commandLine().getErr());
        return dev.crucible.runner.Main.EXIT_USAGE;
    }
}
