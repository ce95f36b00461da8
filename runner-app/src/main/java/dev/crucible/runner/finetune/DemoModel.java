package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.RunnerEnvironment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The embedded demo model: a small Llama-shaped chat model built by {@code scripts/build-demo-model.sh} and
 * committed as {@code demo-model/} at the repository root. It refuses harmful requests and answers harmless ones,
 * so experiments have something to work on without a download; commands use it when {@code --model} is absent.
 *
 * <p>Where it is looked for, first hit wins: {@code $CRUCIBLE_DEMO_MODEL}; {@code demo-model/} in the distribution
 * folder and each of its ancestors (a distribution built inside the repository finds the repository's copy); then
 * in the working directory and each of its ancestors.
 */
public final class DemoModel {
    public static final String FOLDER = "demo-model";
    public static final String ENVIRONMENT_VARIABLE = "CRUCIBLE_DEMO_MODEL";

    private DemoModel() {
    }

    public static Optional<Path> locate(RunnerEnvironment environment) {
        return locate(environment, Path.of(System.getProperty("user.dir")));
    }

    /** The same, with the working directory given (for tests). */
    public static Optional<Path> locate(RunnerEnvironment environment, Path workingDirectory) {
        Optional<String> configured = environment.get(ENVIRONMENT_VARIABLE);
        if (configured.isPresent()) {
            Path path = Path.of(configured.get());
            if (!isModel(path)) {
                throw new UserInputException(ENVIRONMENT_VARIABLE + "=" + configured.get()
                        + " is not a model folder (no config.json)");
            }
            return Optional.of(path);
        }
        return candidates(environment, workingDirectory).stream().filter(DemoModel::isModel).findFirst();
    }

    /** The demo model, or a one-line error saying where it was looked for. */
    public static Path require(RunnerEnvironment environment) {
        return locate(environment).orElseThrow(() -> new UserInputException("no --model given and the demo model "
                + "was not found (looked for " + FOLDER + "/ beside the distribution, in the working directory and "
                + "their parents); pass --model, set " + ENVIRONMENT_VARIABLE + ", or run scripts/build-demo-model.sh"));
    }

    static List<Path> candidates(RunnerEnvironment environment, Path workingDirectory) {
        Set<Path> ordered = new LinkedHashSet<>();
        environment.distHome().ifPresent(home -> ancestors(home.toAbsolutePath().normalize(), ordered));
        ancestors(workingDirectory.toAbsolutePath().normalize(), ordered);
        return new ArrayList<>(ordered);
    }

    private static void ancestors(Path start, Set<Path> into) {
        for (Path dir = start; dir != null; dir = dir.getParent()) {
            into.add(dir.resolve(FOLDER));
        }
    }

    private static boolean isModel(Path folder) {
        return Files.isRegularFile(folder.resolve("config.json"));
    }
}
