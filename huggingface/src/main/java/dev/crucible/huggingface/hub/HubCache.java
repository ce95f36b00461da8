package dev.crucible.huggingface.hub;

import dev.crucible.api.io.AtomicFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Objects;
import java.util.Optional;

/**
 * The Hugging Face hub cache layout, shared with huggingface_hub, transformers and the other tools that use it:
 *
 * <pre>
 * &lt;cache&gt;/models--org--name/
 *   refs/&lt;revision&gt;                 a file holding the commit hash the revision pointed at
 *   blobs/&lt;etag&gt;                     file contents, named by the Hub's ETag (sha256 for LFS files)
 *   snapshots/&lt;commit&gt;/&lt;file&gt;       relative symlinks into blobs/ (copies where links are impossible)
 * </pre>
 */
public final class HubCache {

    private final Path root;

    public HubCache(Path root) {
        this.root = Objects.requireNonNull(root, "root is null");
    }

    public Path root() {
        return root;
    }

    /** {@code models--org--name}: the repository id with '/' replaced by "--". */
    public Path repoFolder(String repoId) {
        return root.resolve("models--" + repoId.replace("/", "--"));
    }

    public Path snapshot(String repoId, String commit) {
        return repoFolder(repoId).resolve("snapshots").resolve(commit);
    }

    public Path blob(String repoId, String etag) {
        return repoFolder(repoId).resolve("blobs").resolve(etag);
    }

    /** The cached snapshot folder for {@code spec}, if there is one: by commit hash directly, else through refs/. */
    public Optional<Path> find(ModelSpec spec) {
        Optional<String> commit = spec.isCommit() ? Optional.of(spec.revision()) : readRef(spec);
        return commit.map(c -> snapshot(spec.repoId(), c)).filter(Files::isDirectory);
    }

    private Optional<String> readRef(ModelSpec spec) {
        Path ref = repoFolder(spec.repoId()).resolve("refs").resolve(spec.revision());
        if (!Files.isRegularFile(ref)) {
            return Optional.empty();
        }
        try {
            String commit = Files.readString(ref, StandardCharsets.UTF_8).trim();
            return ModelSpec.isCommitHash(commit) ? Optional.of(commit) : Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + ref, e);
        }
    }

    /** Points {@code refs/<revision>} at {@code commit}; written whole, without a newline, as huggingface_hub does. */
    public void writeRef(String repoId, String revision, String commit) {
        Path ref = repoFolder(repoId).resolve("refs").resolve(revision);
        try {
            Files.createDirectories(ref.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + ref.getParent(), e);
        }
        byte[] bytes = commit.getBytes(StandardCharsets.US_ASCII);
        AtomicFiles.write(ref, channel -> {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        });
    }

    /**
     * Makes {@code snapshots/<commit>/<file>} a relative symlink to {@code blob}, or a copy of it where the file
     * system cannot link (Windows without developer mode, some network mounts).
     */
    public Path link(String repoId, String commit, String file, Path blob) {
        Path pointer = snapshot(repoId, commit).resolve(file);
        try {
            Files.createDirectories(pointer.getParent());
            Path target = pointer.getParent().relativize(blob);
            if (Files.isSymbolicLink(pointer) && Files.readSymbolicLink(pointer).equals(target)) {
                return pointer;
            }
            Files.deleteIfExists(pointer);
            try {
                Files.createSymbolicLink(pointer, target);
            } catch (UnsupportedOperationException | FileSystemException noLinks) {
                Path temporary = AtomicFiles.createTemporarySibling(pointer);
                try {
                    Files.copy(blob, temporary, StandardCopyOption.REPLACE_EXISTING);
                    Files.move(temporary, pointer, StandardCopyOption.ATOMIC_MOVE,
                            StandardCopyOption.REPLACE_EXISTING);
                } finally {
                    AtomicFiles.deleteQuietly(temporary);
                }
            }
            return pointer;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot place " + file + " in " + pointer.getParent(), e);
        }
    }
}
