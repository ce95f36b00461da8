package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Finds the files of one split in a dataset folder laid out the way the Hugging Face Hub lays out datasets:
 * {@code data/train-00000-of-00002.parquet}, {@code default/train/0000.parquet} (the parquet conversion branch),
 * {@code train.jsonl}, {@code harmful_test.csv}. A file belongs to split {@code S} when {@code S} appears in its
 * path as a whole word between separators ({@code - _ . /}, space or digits), so {@code train} matches
 * {@code train-00000} but not {@code training}.
 */
final class DatasetFolder {

    static final String DEFAULT_SPLIT = "train";
    private static final int MAX_DEPTH = 8;

    private DatasetFolder() {
    }

    /** The split's files in one format (parquet preferred), sorted so shards are read in order. */
    static SplitFiles find(Path folder, String split, String label) {
        List<Path> dataFiles = dataFiles(folder);
        Pattern word = Pattern.compile("(^|[-_. /0-9])" + Pattern.quote(split.toLowerCase(Locale.ROOT))
                + "($|[-_. /0-9])");
        Map<PromptFormat, List<Path>> byFormat = new TreeMap<>(Comparator.comparingInt(
                PromptFormat.DATASET_PREFERENCE::indexOf));
        for (Path file : dataFiles) {
            String relative = stem(folder.relativize(file));
            if (word.matcher(relative).find()) {
                byFormat.computeIfAbsent(PromptFormat.of(file).orElseThrow(), f -> new ArrayList<>())
                        .add(file);
            }
        }
        if (byFormat.isEmpty()) {
            String found = dataFiles.isEmpty() ? "no data files at all"
                    : "found " + dataFiles.stream().limit(5).map(f -> folder.relativize(f).toString())
                    .reduce((a, b) -> a + ", " + b).orElse("") + (dataFiles.size() > 5 ? ", ..." : "");
            throw new UserInputException("'" + label + "' has no files for split '" + split + "' in " + folder + " ("
                    + Columns.printable(found) + "): name another split, e.g. @test");
        }
        Map.Entry<PromptFormat, List<Path>> chosen = byFormat.entrySet().iterator().next();
        List<Path> files = chosen.getValue().stream().sorted(Comparator.comparing(Path::toString)).toList();
        requireOneSubset(folder, files, label);
        return new SplitFiles(chosen.getKey(), files);
    }

    /** Files of one split from different top-level folders are different subsets (configs), not shards. */
    private static void requireOneSubset(Path folder, List<Path> files, String label) {
        TreeSet<String> subsets = new TreeSet<>();
        for (Path file : files) {
            Path relative = folder.relativize(file);
            subsets.add(relative.getNameCount() > 1 ? relative.getName(0).toString() : ".");
        }
        if (subsets.size() > 1) {
            throw new UserInputException("'" + label + "' holds this split in several subsets (" + String.join(", ",
                    subsets) + "): name one, e.g. hf:<org>/<name>/" + subsets.last() + " or the folder "
                    + folder.resolve(subsets.last()));
        }
    }

    private static List<Path> dataFiles(Path folder) {
        try (Stream<Path> walk = Files.walk(folder, MAX_DEPTH, FileVisitOption.FOLLOW_LINKS)) {
            return walk.filter(Files::isRegularFile)
                    .filter(file -> !hidden(folder.relativize(file)))
                    .filter(file -> PromptFormat.of(file).isPresent() && !isReadme(file))
                    .sorted()
                    .toList();
        } catch (IOException | UncheckedIOException e) {
            throw new UserInputException("cannot list dataset folder " + folder + ": " + e.getMessage(), e);
        }
    }

    private static boolean hidden(Path relative) {
        for (Path part : relative) {
            if (part.toString().startsWith(".")) {
                return true;
            }
        }
        return false;
    }

    /** Files without an extension count as text for single files, but in a dataset folder they are not data. */
    private static boolean isReadme(Path file) {
        String name = file.getFileName().toString();
        return !name.contains(".") || name.equalsIgnoreCase("README.txt") || name.equalsIgnoreCase("LICENSE.txt");
    }

    private static String stem(Path relative) {
        String text = relative.toString().replace('\\', '/').toLowerCase(Locale.ROOT);
        int dot = text.lastIndexOf('.');
        return dot > text.lastIndexOf('/') ? text.substring(0, dot) : text;
    }

    record SplitFiles(PromptFormat format, List<Path> files) {
    }
}
