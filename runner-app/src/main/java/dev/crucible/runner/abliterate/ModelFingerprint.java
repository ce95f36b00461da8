package dev.crucible.runner.abliterate;

import dev.crucible.runner.export.FileHashes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What a model folder holds, as the SHA-256 of each file the model is made of (weights, config, tokenizer, chat
 * template; not its README or dot files). Hashing a multi-GB checkpoint on every run would cost more than the
 * work it guards, so a file is hashed only once: a file whose size and modification time equal an earlier
 * stamp's keeps that stamp's hash (git's index does the same), and a file in the Hugging Face cache is a link to
 * a blob named by its SHA-256 already.
 */
public final class ModelFingerprint {
    /** Hub cache blobs of LFS files (every weight file) are named by the SHA-256 of their content. */
    private static final Pattern SHA256_NAME = Pattern.compile("[0-9a-f]{64}");

    /** One file: its size and modification time (to notice a change without reading it) and its content hash. */
    public record FileStamp(long bytes, long modifiedMillis, String sha256) {
        public FileStamp {
            Objects.requireNonNull(sha256, "sha256 is null");
        }
    }

    private ModelFingerprint() {
    }

    /**
     * Stamps every model file directly in {@code dir}, by name (sorted), reusing the hash of {@code earlier}
     * stamps whose size and modification time still match.
     */
    public static Map<String, FileStamp> of(Path dir, Map<String, FileStamp> earlier) {
        Map<String, FileStamp> out = new LinkedHashMap<>();
        List<Path> files;
        try (var listing = Files.list(dir)) {
            files = listing.filter(ModelFingerprint::isModelFile).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the model folder " + dir, e);
        }
        for (Path file : files) {
            String name = file.getFileName().toString();
            try {
                long bytes = Files.size(file);
                long modified = Files.getLastModifiedTime(file).toMillis();
                FileStamp before = earlier.get(name);
                String sha256 = before != null && before.bytes() == bytes && before.modifiedMillis() == modified
                        ? before.sha256() : hubBlobHash(file).orElseGet(() -> FileHashes.sha256(file));
                out.put(name, new FileStamp(bytes, modified, sha256));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + file, e);
            }
        }
        return out;
    }

    private static boolean isModelFile(Path file) {
        String name = file.getFileName().toString();
        return Files.isRegularFile(file) && !name.startsWith(".") && !name.toLowerCase(Locale.ROOT).endsWith(".md");
    }

    private static Optional<String> hubBlobHash(Path file) throws IOException {
        if (!Files.isSymbolicLink(file)) {
            return Optional.empty();
        }
        Path target = Files.readSymbolicLink(file).getFileName();
        return target != null && SHA256_NAME.matcher(target.toString()).matches()
                ? Optional.of(target.toString()) : Optional.empty();
    }
}
