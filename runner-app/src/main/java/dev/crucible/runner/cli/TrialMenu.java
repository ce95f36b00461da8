package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.abliterate.TrialSelection;
import dev.crucible.runner.study.FrozenTrial;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * What a person at a terminal is asked after a run: which trial to take (the recommended one unless they say
 * otherwise), then what to do with it: export it merged or as an adapter, chat with it, evaluate it, take another
 * trial, or quit. A mistake (a folder that exists, a number that is no trial) is said in one line and asked again.
 */
final class TrialMenu {
    /** What the menu does with a trial; each returns when done, back to the menu. */
    interface Actions {
        void export(FrozenTrial trial, Path dir, boolean adapter);

        void chat(FrozenTrial trial);

        void evaluate(FrozenTrial trial);
    }

    private static final List<String> CHOICES = List.of(
            "export it as a merged model folder (Hugging Face safetensors)",
            "export it as a PEFT adapter folder",
            "chat with it",
            "evaluate it (score it with the configured scorers)",
            "choose another trial",
            "quit");
    private static final int QUIT = CHOICES.size();

    private final Interactive person;
    private final PrintWriter log;
    private final List<FrozenTrial> trials;
    private final Optional<FrozenTrial> recommended;
    private final Function<FrozenTrial, String> describe;
    private final Supplier<Path> mergedFolder;
    private final Supplier<Path> adapterFolder;

    /**
     * @param trials        every trial of the study (any may be chosen; the front is what was just shown)
     * @param describe      a trial's scores in words
     * @param mergedFolder  the folder offered for a merged export (one that does not exist yet)
     * @param adapterFolder the same for an adapter
     */
    TrialMenu(Interactive person, PrintWriter log, List<FrozenTrial> trials, Optional<FrozenTrial> recommended,
              Function<FrozenTrial, String> describe, Supplier<Path> mergedFolder, Supplier<Path> adapterFolder) {
        this.person = person;
        this.log = log;
        this.trials = List.copyOf(trials);
        this.recommended = recommended;
        this.describe = describe;
        this.mergedFolder = mergedFolder;
        this.adapterFolder = adapterFolder;
    }

    /** Asks until the person quits or the input ends. */
    void run(Actions actions) {
        log.println();
        for (Optional<FrozenTrial> trial = chooseTrial(); trial.isPresent(); trial = chooseTrial()) {
            if (!actOn(trial.get(), actions)) {
                return;
            }
        }
    }

    private Optional<FrozenTrial> chooseTrial() {
        String fallback = recommended.map(t -> Integer.toString(t.number())).orElse("q");
        while (true) {
            Optional<String> line = person.line("Which trial? (a trial number, q to quit) [" + fallback + "]: ");
            String answer = line.map(String::strip).orElse("q");
            if (answer.isEmpty()) {
                answer = fallback;
            }
            if (answer.equalsIgnoreCase("q") || answer.equalsIgnoreCase("quit")) {
                return Optional.empty();
            }
            try {
                int number = TrialSelection.parseNumber(answer);
                return Optional.of(TrialSelection.byNumber(trials, number));
            } catch (UserInputException e) {
                log.println(e.getMessage());
            }
        }
    }

    /** The actions on one trial; false when the person quit. */
    private boolean actOn(FrozenTrial trial, Actions actions) {
        while (true) {
            log.println("Trial " + trial.number() + " (" + describe.apply(trial) + "):");
            for (int i = 0; i < CHOICES.size(); i++) {
                log.println("  " + (i + 1) + ". " + CHOICES.get(i));
            }
            log.println("  (GGUF export arrives with a later version)");
            Optional<String> line = person.line("What now? [" + QUIT + "]: ");
            if (line.isEmpty()) {
                return false;
            }
            String answer = line.get().strip().isEmpty() ? Integer.toString(QUIT) : line.get().strip();
            try {
                switch (answer) {
                    case "1" -> actions.export(trial, folder("Folder for the merged model", mergedFolder.get()), false);
                    case "2" -> actions.export(trial, folder("Folder for the adapter", adapterFolder.get()), true);
                    case "3" -> actions.chat(trial);
                    case "4" -> actions.evaluate(trial);
                    case "5" -> {
                        return true;
                    }
                    case "6", "q", "quit" -> {
                        return false;
                    }
                    default -> log.println("'" + answer + "' is not one of 1-" + CHOICES.size());
                }
            } catch (UserInputException e) {
                log.println("error: " + e.getMessage());
            }
            log.println();
        }
    }

    private Path folder(String question, Path offered) {
        return Path.of(person.ask(question + " [" + offered + "]: ", offered.toString()));
    }
}
