package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import dev.crucible.huggingface.hub.HubEnvironment;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Hugging Face dataset repositories in the local hub cache, the layout huggingface_hub writes for
 * {@code --repo-type dataset}:
 * <pre>
 * &lt;cache&gt;/datasets--org--name/refs/&lt;revision&gt;        the commit the revision pointed at
 * &lt;cache&gt;/datasets--org--name/snapshots/&lt;commit&gt;/...   the files (symlinks into blobs/)
 * </pre>
 * Lookup is offline only: a dataset that is not there is a one-line error saying how to download it.
 */
public final class DatasetCache {

    public static final String DEFAULT_REVISION = "main";

    /** The Hub's repository-name rules, same as for models. */
    private static final Pattern REPO_ID =
            Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}");
    private static final Pattern COMMIT = Pattern.compile("[0-9a-f]{40}");
    private static final Pattern SAFE_REVISION = Pattern.compile("[A-Za-z0-9._/-]{1,255}");

    private final Path root;

    public DatasetCache(Path root) {
        this.root = Objects.requireNonNull(root, "root is null");
    }

    /** The cache huggingface_hub would use for this environment ({@code HF_HUB_CACHE}, {@code HF_HOME}, ...). */
    public static DatasetCache from(Map<String, String> env) {
        Path home = Optional.ofNullable(env.get("HOME")).filter(h -> !h.isBlank()).map(Path::of)
                .orElseGet(() -> Path.of(System.getProperty("user.home")));
        return new DatasetCache(HubEnvironment.from(env, home).cacheDir());
    }

    public Path root() {
        return root;
    }

    /** True for {@code org/name}: the only shape a dataset id takes. */
    public static boolean isRepoId(String text) {
        return REPO_ID.matcher(text).matches() && !text.contains("--") && !text.contains("..");
    }

    public Path repoFolder(String repoId) {
        return root.resolve("datasets--" + repoId.replace("/", "--"));
    }

    /**
     * The snapshot folder of {@code repoId} at {@code revision} (a branch, tag or commit; {@code main} when empty).
     *
     * @throws UserInputException when the id is malformed or the dataset is not in the cache
     */
    public Path snapshot(String repoId, Optional<String> revision) {
        if (!isRepoId(repoId)) {
            throw new UserInputException("'" + repoId + "' is not a Hugging Face dataset id like org/name");
        }
        String rev = revision.orElse(DEFAULT_REVISION);
        if (!SAFE_REVISION.matcher(rev).matches() || rev.contains("..")) {
            throw new UserInputException("'" + rev + "' is not a valid revision of " + repoId);
        }
        Path repo = repoFolder(repoId);
        String commit = COMMIT.matcher(rev).matches() ? rev : readRef(repo, rev);
        Path snapshot = commit == null ? null : repo.resolve("snapshots").resolve(commit);
        if (snapshot == null || !Files.isDirectory(snapshot)) {
            throw new UserInputException("dataset " + repoId + (revision.isPresent() ? "@" + rev : "")
                    + " is not in the Hugging Face cache (" + repo + "); download it with: huggingface-cli download"
                    + " --repo-type dataset " + repoId + (revision.isPresent() ? " --revision " + rev : ""));
        }
        return snapshot;
    }

    private static String readRef(Path repo, String revision) {
        Path ref = repo.resolve("refs").resolve(revision);
        if (!Files.isRegularFile(ref)) {
            return null;
        }
        try {
            String commit = Files.readString(ref, StandardCharsets.UTF_8).strip();
            return COMMIT.matcher(commit).matches() ? commit : null;
        } catch (IOException e) {
            throw new UserInputException("cannot read " + ref + ": " + e.getMessage(), e);
        }
    }
}
