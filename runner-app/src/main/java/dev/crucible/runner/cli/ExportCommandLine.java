package dev.crucible.runner.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The command a person types to export a trial of the study just run: the flags they gave that shape the study
 * (model, prompts, dtype, config file, ...), without those that steer one run (trial count, export, seed: a
 * continued study keeps its own seed, and an export on a study adds no trials), then {@code --study}, {@code --trial}
 * and {@code --export}.
 */
final class ExportCommandLine {
    /** How the README and the project's scripts start the runner. */
    static final String LAUNCHER = "./runner";

    private static final Set<String> RUN_ONLY = Set.of("--trials", "--headless", "--json", "--on-existing", "--study",
            "--trial", "--export", "--export-adapter", "--export-dir", "--export-format", "--export-trial", "--export-gguf", "--gguf-type", "--force",
            "--seed", "--max-kl");
    private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9_./:@%+=,-]+");

    private ExportCommandLine() {
    }

    static String of(CommandLine.ParseResult parsed, Path studyDir, int trial, Path exportDir) {
        List<String> words = new ArrayList<>(List.of(LAUNCHER, "abliterate"));
        for (OptionSpec option : parsed.matchedOptions()) {
            if (RUN_ONLY.contains(option.longestName()) || option.usageHelp() || option.versionHelp()) {
                continue;
            }
            List<String> values = option.originalStringValues();
            if (values.isEmpty()) {
                words.add(option.longestName());
            }
            for (String value : values) {
                words.add(option.longestName());
                words.add(value);
            }
        }
        words.addAll(List.of("--study", studyDir.toString(), "--trial", Integer.toString(trial), "--export", exportDir.toString()));
        return String.join(" ", words.stream().map(ExportCommandLine::quote).toList());
    }

    /** A word as a POSIX shell reads it back: as it is when plain, else in single quotes. */
    static String quote(String word) {
        if (!word.isEmpty() && PLAIN.matcher(word).matches()) {
            return word;
        }
        return "'" + word.replace("'", "'\\''") + "'";
    }

    /** {@code <model>-abliterated<suffix>} in the working folder, numbered past folders that exist. */
    static Path freeFolder(String modelName, String suffix) {
        Path candidate = Path.of(modelName + "-abliterated" + suffix);
        for (int i = 2; Files.exists(candidate); i++) {
            candidate = Path.of(modelName + "-abliterated" + suffix + "-" + i);
        }
        return candidate;
    }
}
