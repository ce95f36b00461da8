package dev.crucible.runner.cli;

import picocli.CommandLine.Command;

@Command(name = "runner",
        mixinStandardHelpOptions = true,
        versionProvider = VersionProvider.class,
        description = "Crucible: edit and fine-tune language models on whatever accelerator this machine has.",
        subcommands = {DevicesCommand.class, DoctorCommand.class, InitModelCommand.class, GenerateCommand.class, AbliterateCommand.class, EvaluateCommand.class,
                ChatCommand.class, BenchCommand.class, FinetuneCommand.class, MergeCommand.class, QuantizeCommand.class, ConvertCommand.class, LowerCommand.class},
        footer = {"", "Run 'runner <command> --help' for a command's options. Exit status 2 means a usage or input error."})
public final class RootCommand implements java.util.concurrent.Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        // No command is a usage error: show what there is, exit 2 so scripts notice.
        spec.commandLine().usage(spec.commandLine().getErr());
        return dev.crucible.runner.Main.EXIT_USAGE;
    }
}
