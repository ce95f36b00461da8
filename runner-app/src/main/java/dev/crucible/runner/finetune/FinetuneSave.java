package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.OutputLocation;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Where a fine-tune's result goes ({@code --out}) and where a resumed run's state comes from ({@code --resume}),
 * checked before any work, and what happens when the final save fails anyway (a disk that filled up during
 * training, a folder made read-only meanwhile): the run's resumable state, the same folder Ctrl+C leaves, is
 * written to the first rescue folder that takes it, and the one-line error says where it is and gives the command
 * that writes {@code --out} from it without training again.
 */
public final class FinetuneSave {
    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT);
    private static final Pattern PLAIN_WORD = Pattern.compile("[A-Za-z0-9_./=:,@%+-]+");

    /** Writes the run's output (adapter or model folder) into a folder, with the resumable state when given. */
    interface Writer {
        void write(Path folder, boolean replace, Optional<FinetuneOutput.StateToSave> state);
    }

    private final Path out;
    private final Optional<Path> resumeFrom;
    private final boolean force;
    private final List<String> commandLine;
    private final List<Path> rescueFolders;

    private FinetuneSave(Path out, Optional<Path> resumeFrom, boolean force, List<String> commandLine,
                         List<Path> rescueFolders) {
        this.out = out;
        this.resumeFrom = resumeFrom;
        this.force = force;
        this.commandLine = List.copyOf(commandLine);
        this.rescueFolders = List.copyOf(rescueFolders);
    }

    /**
     * Checks {@code --out} and {@code --resume} before anything else happens: the folder {@code --resume} names must
     * hold a stopped run's state; {@code --out} must be new (or {@code --force}d, or the folder the run resumes in)
     * and inside a folder this process can write.
     *
     * @param commandLine   the arguments after {@code runner}, for the command a rescue message gives
     * @param rescueFolders where the run is saved when {@code --out} cannot take it, first choice first
     */
    static FinetuneSave check(FinetuneSettings settings, List<String> commandLine, List<Path> rescueFolders) {
        settings.resume().ifPresent(TrainerStateFile::requireIn);
        FinetuneSave save = new FinetuneSave(settings.out(), settings.resume(), settings.force(), commandLine,
                rescueFolders);
        Path out = settings.out();
        if (Files.exists(out) && !save.replace()) {
            throw new UserInputException(out + " already exists; pass --force to replace it or --resume to continue "
                    + "a stopped run there");
        }
        OutputLocation.checkNewFolder(out, save.replace(), 0);
        return save;
    }

    /** The current directory, the home directory and the temporary directory, in that order. */
    public static List<Path> defaultRescueFolders() {
        Set<Path> folders = new LinkedHashSet<>();
        folders.add(Path.of("").toAbsolutePath());
        folders.add(Path.of(System.getProperty("user.home")).toAbsolutePath());
        folders.add(Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath());
        return List.copyOf(folders);
    }

    /** Whether an existing {@code --out} may be replaced: with {@code --force}, or when the run resumes there. */
    boolean replace() {
        return force || resumesInPlace();
    }

    /** The folder the stopped run's state is read from. */
    Optional<Path> resumeFrom() {
        return resumeFrom;
    }

    private boolean resumesInPlace() {
        return resumeFrom.map(from -> same(from, out)).orElse(false);
    }

    /**
     * Checks that {@code --out}'s file system has room for the output's known size, before the training that a full
     * disk would waste.
     */
    void checkSpace(long bytes) {
        OutputLocation.checkNewFolder(out, replace(), bytes);
    }

    /**
     * Writes the output to {@code --out}. When that fails, writes the resumable run (output and optimizer state) to
     * the first rescue folder that takes it, and throws the one-line error saying where it is and how to finish.
     *
     * @param stopped     the state of a run stopped early (saved with the output, for {@code --resume}), or empty
     * @param state       the run's state, taken only for a rescue
     * @param rescueBytes what the rescue folder needs: the output and the state
     * @param what        what was saved, as the message names it ("the trained run", "the run so far ...")
     */
    void save(Writer writer, Optional<FinetuneOutput.StateToSave> stopped, Supplier<FinetuneOutput.StateToSave> state,
              long rescueBytes, String what) {
        RuntimeException failure;
        try {
            writer.write(out, replace(), stopped);
            return;
        } catch (UserInputException | UncheckedIOException e) {
            failure = e;
        }
        String problem = describe(failure);
        FinetuneOutput.StateToSave saved = stopped.orElseGet(state);
        List<String> refusals = new ArrayList<>();
        String name = "crucible-rescued-" + out.toAbsolutePath().normalize().getFileName() + "-"
                + LocalDateTime.now().format(STAMP);
        for (Path folder : rescueFolders) {
            Path rescue = folder.resolve(name);
            Optional<String> refused = refusal(rescue, rescueBytes).or(() -> tryWrite(writer, rescue, saved));
            if (refused.isEmpty()) {
                throw new UserInputException(problem + "; " + what + " is saved with its optimizer state in " + rescue
                        + "; once " + out + " can be written, finish without training again: " + resumeCommand(rescue),
                        failure);
            }
            refusals.add(folder + " (" + refused.get() + ")");
        }
        throw new UserInputException(problem + "; " + what + " could not be saved elsewhere either, so it is lost "
                + "(tried " + String.join(", ", refusals) + ")", failure);
    }

    /** Why a folder of {@code bytes} cannot be written at {@code folder}, or empty when it can (as far as asking tells). */
    private static Optional<String> refusal(Path folder, long bytes) {
        try {
            OutputLocation.checkNewFolder(folder, false, bytes);
            return Optional.empty();
        } catch (UserInputException e) {
            return Optional.of(e.getMessage());
        }
    }

    /** Empty when the folder was written, else why not. */
    private static Optional<String> tryWrite(Writer writer, Path folder, FinetuneOutput.StateToSave state) {
        try {
            writer.write(folder, false, Optional.of(state));
            return Optional.empty();
        } catch (UserInputException | UncheckedIOException e) {
            return Optional.of(describe(e));
        }
    }

    /** The command line that was run, with {@code --resume FROM} in place of any {@code --resume} it had. */
    String resumeCommand(Path from) {
        List<String> words = new ArrayList<>(List.of("runner"));
        for (int i = 0; i < commandLine.size(); i++) {
            String arg = commandLine.get(i);
            if (arg.equals("--resume")) {
                if (i + 1 < commandLine.size() && !commandLine.get(i + 1).startsWith("-")) {
                    i++;
                }
            } else if (!arg.startsWith("--resume=")) {
                words.add(arg);
            }
        }
        words.add("--resume");
        words.add(from.toString());
        return String.join(" ", words.stream().map(FinetuneSave::shellWord).toList());
    }

    private static String shellWord(String word) {
        return PLAIN_WORD.matcher(word).matches() ? word : "'" + word.replace("'", "'\\''") + "'";
    }

    private static String describe(RuntimeException failure) {
        if (failure instanceof UserInputException) {
            return failure.getMessage();
        }
        Throwable root = failure;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return failure.getMessage() + (root == failure ? "" : ": " + root.getMessage());
    }

    private static boolean same(Path a, Path b) {
        return a.toAbsolutePath().normalize().equals(b.toAbsolutePath().normalize());
    }
}
