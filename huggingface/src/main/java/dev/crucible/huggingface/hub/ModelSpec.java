package dev.crucible.huggingface.hub;

import dev.crucible.api.UserInputException;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A Hugging Face model named by {@code org/name[@revision]} (or a legacy {@code name} without organisation).
 * The revision is a branch, tag or 40-hex commit; without one it is {@code main}.
 */
public record ModelSpec(String repoId, String revision) {

    public static final String DEFAULT_REVISION = "main";

    /** The Hub's repository-name rules: letters, digits, '-', '_', '.', at most 96 characters per part. */
    private static final Pattern REPO_ID =
            Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?");
    private static final Pattern COMMIT = Pattern.compile("[0-9a-f]{40}");

    public ModelSpec {
        Objects.requireNonNull(repoId, "repoId is null");
        Objects.requireNonNull(revision, "revision is null");
    }

    /**
     * Parses {@code org/name[@revision]}.
     *
     * @throws UserInputException when it is not a valid repository id or revision
     */
    public static ModelSpec parse(String spec) {
        Objects.requireNonNull(spec, "spec is null");
        int at = spec.indexOf('@');
        String repoId = at < 0 ? spec : spec.substring(0, at);
        String revision = at < 0 ? DEFAULT_REVISION : spec.substring(at + 1);
        if (!REPO_ID.matcher(repoId).matches() || repoId.contains("--") || repoId.contains("..")
                || repoId.endsWith(".") || repoId.endsWith("-")) {
            throw new UserInputException("'" + spec + "' is neither an existing folder nor a Hugging Face model id"
                    + " like org/name or org/name@revision");
        }
        if (!validRevision(revision)) {
            throw new UserInputException("'" + revision + "' in '" + spec + "' is not a valid revision"
                    + " (a branch, tag or commit hash)");
        }
        return new ModelSpec(repoId, revision);
    }

    /** Revisions become paths under refs/, so nothing that could climb out of it. */
    private static boolean validRevision(String revision) {
        if (revision.isEmpty() || revision.length() > 255 || revision.startsWith("/") || revision.endsWith("/")) {
            return false;
        }
        for (String part : revision.split("/", -1)) {
            if (part.isEmpty() || part.equals(".") || part.equals("..")) {
                return false;
            }
        }
        return revision.chars().noneMatch(c -> c < 0x20 || c == '\\' || c == 0x7F);
    }

    /** True when the revision is itself a commit hash, so no ref needs to be looked up. */
    public boolean isCommit() {
        return COMMIT.matcher(revision).matches();
    }

    static boolean isCommitHash(String text) {
        return text != null && COMMIT.matcher(text).matches();
    }

    @Override
    public String toString() {
        return repoId + "@" + revision;
    }
}
