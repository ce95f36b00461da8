package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.text.BoundedLineReader;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Loads the prompts of a {@link PromptSourceSpec}: reads the source, keeps the non-blank values, takes the slice,
 * wraps each prompt in the set's prefix and suffix. Rows whose value is missing or blank are skipped before the
 * slice is taken, so {@code [:400]} means the first 400 prompts.
 *
 * <p>Sources resolve in this order: {@code bundled:} names a set shipped in the runner jar; {@code hf:} names a
 * dataset in the local Hugging Face cache; anything else is a path relative to the working directory, and when
 * no such path exists but the text looks like {@code org/name}, a dataset id.
 */
public final class PromptLoader {

    /** Where bundled sets live on the classpath: {@code bundled:harmful/train} is {@code harmful_train.txt}. */
    static final String BUNDLED_FOLDER = "dev/crucible/runner/prompts/";
    private static final Pattern BUNDLED_NAME = Pattern.compile("[a-z0-9_-]+(/[a-z0-9_-]+)?");

    private PromptLoader() {
    }

    /**
     * The prompts of {@code spec}, dressed with its prefix and suffix, never empty.
     *
     * @param workingDir the folder relative paths are resolved against
     * @param env        the environment, for the Hugging Face cache location ({@code HF_HUB_CACHE}, {@code HF_HOME})
     * @throws UserInputException for a missing file or dataset, a malformed file, or an empty result, with a
     *                            one-line message naming the source
     */
    public static List<String> load(PromptSourceSpec spec, Path workingDir, Map<String, String> env) {
        Objects.requireNonNull(spec, "spec is null");
        Objects.requireNonNull(workingDir, "workingDir is null");
        Objects.requireNonNull(env, "env is null");
        Read read = read(spec, workingDir, env);
        List<String> sliced = spec.split().apply(read.values());
        if (sliced.isEmpty()) {
            throw new UserInputException("prompt set '" + spec.compact() + "' is empty (" + (read.values().isEmpty()
                    ? read.where() + " holds no non-blank prompts" : "the slice " + spec.split().sliceText()
                    + " leaves none of its " + read.values().size() + " prompts") + ")");
        }
        List<String> dressed = new ArrayList<>(sliced.size());
        for (String prompt : sliced) {
            dressed.add(spec.dress(prompt));
        }
        return List.copyOf(dressed);
    }

    private record Read(List<String> values, String where) {
    }

    private static Read read(PromptSourceSpec spec, Path workingDir, Map<String, String> env) {
        String source = spec.source();
        if (source.startsWith(PromptSourceSpec.BUNDLED_SCHEME)) {
            return bundled(spec, source.substring(PromptSourceSpec.BUNDLED_SCHEME.length()));
        }
        if (source.startsWith(PromptSourceSpec.HUB_SCHEME)) {
            return hub(spec, source.substring(PromptSourceSpec.HUB_SCHEME.length()), env);
        }
        Path path;
        try {
            path = workingDir.resolve(source).normalize();
        } catch (InvalidPathException e) {
            throw new UserInputException("prompt source '" + source + "' is not a valid path: " + e.getReason());
        }
        if (Files.exists(path)) {
            return local(spec, path, source);
        }
        if (DatasetCache.isRepoId(source) && !namesAFile(source)) {
            return hub(spec, source, env);
        }
        throw new UserInputException("prompt file '" + source + "' does not exist (looked for " + path + ")");
    }

    /** {@code prompts/harmful.csv} is a file that is missing, not the dataset {@code prompts/harmful.csv}. */
    private static boolean namesAFile(String source) {
        String name = Path.of(source).getFileName().toString();
        return name.contains(".") && PromptFormat.of(Path.of(source)).isPresent();
    }

    private static Read local(PromptSourceSpec spec, Path path, String label) {
        if (Files.isDirectory(path)) {
            return folder(spec, path, label);
        }
        spec.split().split().ifPresent(split -> {
            throw new UserInputException("'" + label + "' is a single file, so it has no split '" + split
                    + "': give only a slice, e.g. " + label + "[:400]");
        });
        if (!Files.isReadable(path)) {
            throw new UserInputException("prompt file '" + label + "' is not readable (" + path + ")");
        }
        return new Read(PromptFormat.require(path, label).read(path, spec.column(), label, needed(spec.split())),
                "'" + label + "'");
    }

    private static Read folder(PromptSourceSpec spec, Path folder, String label) {
        String split = spec.split().split().orElse(DatasetFolder.DEFAULT_SPLIT);
        DatasetFolder.SplitFiles files = DatasetFolder.find(folder, split, label);
        List<String> values = new ArrayList<>();
        int needed = needed(spec.split());
        for (Path file : files.files()) {
            if (values.size() >= needed) {
                break;
            }
            values.addAll(files.format().read(file, spec.column(), label + "/" + folder.relativize(file),
                    needed - values.size()));
        }
        return new Read(values, "split '" + split + "' of '" + label + "'");
    }

    /**
     * How many prompts from the start a slice can use: {@code [:400]} and {@code [100:200]} need only the first
     * 400 and 200, so large datasets are not read whole; slices that count from the end need everything.
     */
    static int needed(SplitSlice slice) {
        boolean fromStart = slice.start().orElse(0) >= 0;
        return fromStart && slice.stop().isPresent() && slice.stop().getAsInt() >= 0 ? slice.stop().getAsInt()
                : Integer.MAX_VALUE;
    }

    /** {@code org/name} or {@code org/name/sub/folder}: the folder limits the search to one subset. */
    private static Read hub(PromptSourceSpec spec, String id, Map<String, String> env) {
        String[] parts = id.split("/", 3);
        if (parts.length < 2) {
            throw new UserInputException("'" + id + "' is not a Hugging Face dataset id like org/name");
        }
        String repoId = parts[0] + "/" + parts[1];
        Path snapshot = DatasetCache.from(env).snapshot(repoId, spec.revision());
        Path folder = snapshot;
        if (parts.length == 3) {
            folder = snapshot.resolve(parts[2]).normalize();
            if (!folder.startsWith(snapshot) || !Files.isDirectory(folder)) {
                throw new UserInputException("dataset " + repoId + " has no folder '" + parts[2] + "' (" + snapshot
                        + ")");
            }
        }
        return folder(spec, folder, id);
    }

    private static Read bundled(PromptSourceSpec spec, String name) {
        if (!BUNDLED_NAME.matcher(name).matches()) {
            throw new UserInputException("'bundled:" + name + "' is not a bundled prompt set name like"
                    + " bundled:harmful/train");
        }
        spec.column().ifPresent(c -> {
            throw new UserInputException("bundled prompt sets are plain text and have no column '" + c + "'");
        });
        spec.split().split().ifPresent(split -> {
            throw new UserInputException("'bundled:" + name + "' takes no split '@" + split + "'; the split is part"
                    + " of the name, e.g. bundled:harmful/test[:100]");
        });
        String resource = BUNDLED_FOLDER + name.replace('/', '_') + ".txt";
        ClassLoader loader = Optional.ofNullable(Thread.currentThread().getContextClassLoader())
                .orElse(PromptLoader.class.getClassLoader());
        InputStream in = loader.getResourceAsStream(resource);
        if (in == null) {
            throw new UserInputException("there is no bundled prompt set '" + name + "' (Crucible ships"
                    + " harmful/train, harmful/test, harmless/train and harmless/test)");
        }
        return new Read(TextFiles.readLines(BoundedLineReader.utf8(in, BoundedLineReader.PROMPT_CHARS),
                "bundled:" + name, needed(spec.split())), "'bundled:" + name + "'");
    }
}
