package dev.crucible.huggingface.hub;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.io.AtomicFiles;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Downloads the files of a model revision into the {@link HubCache}, the way huggingface_hub does: ask
 * {@code /api/models/<repo>/revision/<rev>} for the commit and file list, fetch each wanted file from
 * {@code /<repo>/resolve/<commit>/<file>} into {@code blobs/}, link it from {@code snapshots/<commit>/}, and only
 * then write {@code refs/<rev>}, so an interrupted download is never mistaken for a complete one.
 *
 * <p>Only what Crucible reads is fetched: configs, tokenizer files, the chat template and the safetensors weights.
 * Pickle files ({@code *.bin}, {@code *.pt}, ...) are never downloaded.
 */
final class HubDownloader {

    /** The non-weight files a model folder may have that Crucible reads. */
    static final List<String> METADATA_FILES = List.of("config.json", "generation_config.json", "tokenizer.json",
            "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja");
    static final String SINGLE_WEIGHTS = "model.safetensors";
    static final String WEIGHTS_INDEX = "model.safetensors.index.json";

    private static final Pattern PICKLE = Pattern.compile("(?i).*\\.(bin|pt|pth|ckpt|pkl|pickle)");
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern BLOB_NAME = Pattern.compile("[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}");
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int MAX_REDIRECTS = 10;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final HubEnvironment environment;
    private final HubCache cache;
    private final DownloadProgress progress;
    private final HttpClient client;

    HubDownloader(HubEnvironment environment, HubCache cache, DownloadProgress progress) {
        this.environment = Objects.requireNonNull(environment, "environment is null");
        this.cache = Objects.requireNonNull(cache, "cache is null");
        this.progress = Objects.requireNonNull(progress, "progress is null");
        // Redirects are followed by hand: the token must not follow a redirect to another host (the CDN).
        this.client = HttpClient.newBuilder()
                .connectTimeout(TIMEOUT)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    /** Downloads what is missing of {@code spec} and returns its snapshot folder. */
    Path download(ModelSpec spec) {
        RevisionInfo info = revisionInfo(spec);
        Set<String> available = new LinkedHashSet<>(info.files());
        List<String> wanted = new ArrayList<>();
        METADATA_FILES.stream().filter(available::contains).forEach(wanted::add);
        if (available.contains(WEIGHTS_INDEX)) {
            fetch(spec, info.commit(), WEIGHTS_INDEX);
            wanted.addAll(shardsOf(spec, info.commit(), available));
        } else if (available.contains(SINGLE_WEIGHTS)) {
            wanted.add(SINGLE_WEIGHTS);
        } else {
            // No standard weights: an adapter or other repository; take its top-level safetensors, if any.
            available.stream().filter(f -> f.endsWith(".safetensors") && !f.contains("/")).forEach(wanted::add);
        }
        boolean hasWeights = wanted.stream().anyMatch(f -> f.endsWith(".safetensors"));
        if (!hasWeights) {
            Optional<String> pickle = available.stream().filter(f -> PICKLE.matcher(f).matches()).findFirst();
            if (pickle.isPresent()) {
                throw new UserInputException("model " + spec.repoId() + " on the Hub has only pickle weights ("
                        + pickle.get() + "), which Crucible never downloads or unpickles because loading them can run"
                        + " arbitrary code; use a repository with safetensors weights, or convert it with"
                        + " save_pretrained(out_dir, safe_serialization=True) and pass the folder");
            }
        }
        for (String file : wanted) {
            fetch(spec, info.commit(), file);
        }
        if (!spec.isCommit()) {
            cache.writeRef(spec.repoId(), spec.revision(), info.commit());
        }
        return cache.snapshot(spec.repoId(), info.commit());
    }

    record RevisionInfo(String commit, List<String> files) {
    }

    RevisionInfo revisionInfo(ModelSpec spec) {
        URI uri = URI.create(environment.endpoint() + "/api/models/" + spec.repoId() + "/revision/"
                + percentEncode(spec.revision(), false));
        HttpResponse<byte[]> response = send(spec, uri, HttpResponse.BodyHandlers.ofByteArray(), true);
        if (response.statusCode() != 200) {
            throw failure(spec, response);
        }
        JsonNode root;
        try {
            root = JSON.readTree(response.body());
        } catch (IOException e) {
            throw new UserInputException(uri + " did not answer with JSON; is HF_ENDPOINT a Hugging Face hub?");
        }
        String commit = root.path("sha").asText("");
        if (!ModelSpec.isCommitHash(commit)) {
            throw new UserInputException(uri + " did not give a commit hash for " + spec);
        }
        List<String> files = new ArrayList<>();
        for (JsonNode sibling : root.path("siblings")) {
            String name = sibling.path("rfilename").asText("");
            if (safeFileName(name)) {
                files.add(name);
            }
        }
        return new RevisionInfo(commit, files);
    }

    /** The shard names in the downloaded index, each a plain file the revision really has. */
    private List<String> shardsOf(ModelSpec spec, String commit, Set<String> available) {
        Path index = cache.snapshot(spec.repoId(), commit).resolve(WEIGHTS_INDEX);
        JsonNode weightMap;
        try {
            weightMap = JSON.readTree(index.toFile()).path("weight_map");
        } catch (JsonProcessingException e) {
            throw new UserInputException(spec + ": " + WEIGHTS_INDEX + " on the Hub is not valid JSON");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + index, e);
        }
        Set<String> shards = new LinkedHashSet<>();
        for (Map.Entry<String, JsonNode> entry : weightMap.properties()) {
            String shard = entry.getValue().asText("");
            if (!safeFileName(shard) || !available.contains(shard)) {
                throw new UserInputException(spec + ": " + WEIGHTS_INDEX + " names shard '" + shard
                        + "', which the repository does not have");
            }
            shards.add(shard);
        }
        return List.copyOf(shards);
    }

    /** Downloads one file into blobs/ (unless that blob is already there) and links it into the snapshot. */
    private void fetch(ModelSpec spec, String commit, String file) {
        Path pointer = cache.snapshot(spec.repoId(), commit).resolve(file);
        if (Files.exists(pointer)) {
            return;
        }
        URI uri = URI.create(environment.endpoint() + "/" + spec.repoId() + "/resolve/" + commit + "/"
                + percentEncode(file, true));
        URI hub = URI.create(environment.endpoint());
        String etag = null;
        long size = -1;
        HttpResponse<InputStream> response = null;
        try {
            for (int hop = 0; ; hop++) {
                boolean toHub = sameOrigin(uri, hub);
                response = send(spec, uri, HttpResponse.BodyHandlers.ofInputStream(), toHub);
                if (toHub) {
                    // huggingface_hub's rule: X-Linked-Etag (LFS files, set on the redirect) wins over ETag.
                    Optional<String> linked = response.headers().firstValue("X-Linked-Etag");
                    Optional<String> plain = response.headers().firstValue("ETag");
                    if (linked.or(() -> plain).isPresent()) {
                        etag = normalizeEtag(linked.or(() -> plain).get());
                    }
                    size = response.headers().firstValueAsLong("X-Linked-Size").orElse(size);
                }
                int status = response.statusCode();
                if (status == 200) {
                    break;
                }
                Optional<String> location = response.headers().firstValue("Location");
                close(response);
                if (status / 100 != 3 || location.isEmpty()) {
                    throw failure(spec, response);
                }
                if (hop >= MAX_REDIRECTS) {
                    throw new UserInputException("too many redirects downloading " + file + " of " + spec);
                }
                uri = uri.resolve(location.get());
            }
            if (size < 0) {
                size = response.headers().firstValueAsLong("Content-Length").orElse(-1);
            }
            if (etag != null && !BLOB_NAME.matcher(etag).matches()) {
                etag = null; // not usable as a file name: fall back to the content's sha256
            }
            Path blob = etag == null ? null : cache.blob(spec.repoId(), etag);
            if (blob == null || !Files.isRegularFile(blob)) {
                blob = receive(spec, file, response, etag, size);
            } else {
                close(response);
            }
            cache.link(spec.repoId(), commit, file, blob);
        } catch (IOException e) {
            close(response);
            throw new UncheckedIOException("cannot store " + file + " of " + spec + " in " + cache.root(), e);
        }
    }

    /** Streams the body into a temporary file in blobs/, checks it, and renames it to its blob name. */
    private Path receive(ModelSpec spec, String file, HttpResponse<InputStream> response, String etag, long size)
            throws IOException {
        Path blobs = cache.repoFolder(spec.repoId()).resolve("blobs");
        Files.createDirectories(blobs);
        Path temporary = AtomicFiles.createTemporarySibling(blobs.resolve(etag == null ? "download" : etag));
        try {
            MessageDigest sha256 = sha256();
            long done = 0;
            progress.onProgress(file, 0, size);
            try (InputStream in = response.body();
                 FileChannel out = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
                byte[] buffer = new byte[1 << 20];
                for (int read; (read = in.read(buffer)) >= 0; ) {
                    ByteBuffer chunk = ByteBuffer.wrap(buffer, 0, read);
                    while (chunk.hasRemaining()) {
                        out.write(chunk);
                    }
                    sha256.update(buffer, 0, read);
                    done += read;
                    progress.onProgress(file, done, size);
                }
                out.force(true);
            }
            if (size >= 0 && done != size) {
                throw new UserInputException("download of " + file + " of " + spec + " stopped after " + done
                        + " of " + size + " bytes; run again to retry");
            }
            String digest = HexFormat.of().formatHex(sha256.digest());
            if (etag != null && SHA256.matcher(etag).matches() && !etag.equals(digest)) {
                throw new UserInputException("download of " + file + " of " + spec + " is corrupted (sha256 "
                        + digest + ", expected " + etag + "); run again to retry");
            }
            Path blob = blobs.resolve(etag != null ? etag : digest);
            Files.move(temporary, blob, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return blob;
        } finally {
            AtomicFiles.deleteQuietly(temporary);
        }
    }

    private <T> HttpResponse<T> send(ModelSpec spec, URI uri, HttpResponse.BodyHandler<T> handler,
                                     boolean withToken) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(TIMEOUT).GET()
                .header("User-Agent", "crucible");
        if (withToken) {
            environment.token().ifPresent(token -> request.header("Authorization", "Bearer " + token));
        }
        try {
            return client.send(request.build(), handler);
        } catch (ConnectException | HttpTimeoutException e) {
            throw new UserInputException("cannot reach " + uri.getScheme() + "://" + uri.getAuthority()
                    + " to download " + spec + " (" + e.getClass().getSimpleName() + "); check the network, or set"
                    + " HF_HUB_OFFLINE=1 to use only models already in " + cache.root());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UncheckedIOException(new InterruptedIOException("download of " + spec + " interrupted"));
        } catch (IOException e) {
            throw new UncheckedIOException("request to " + uri.getAuthority() + " failed for " + spec, e);
        }
    }

    /** One line per failure; the Hub's X-Error-Code tells gated, missing repository and missing revision apart. */
    private UserInputException failure(ModelSpec spec, HttpResponse<?> response) {
        int status = response.statusCode();
        String code = response.headers().firstValue("X-Error-Code").orElse("");
        String tokenAdvice = environment.token().isPresent()
                ? "check that HF_TOKEN belongs to an account with access"
                : "set HF_TOKEN to an access token of an account that has access";
        if (code.equals("GatedRepo")) {
            return new UserInputException("model " + spec.repoId() + " is gated: accept its conditions on "
                    + environment.endpoint() + "/" + spec.repoId() + " and " + tokenAdvice);
        }
        if (code.equals("RevisionNotFound")) {
            return new UserInputException("revision '" + spec.revision() + "' of model " + spec.repoId()
                    + " not found on " + environment.endpoint());
        }
        if (code.equals("RepoNotFound") || status == 404) {
            // The Hub answers 404 (or 401 RepoNotFound) for private repositories too, to not reveal them.
            return new UserInputException("model " + spec.repoId() + " or its revision '" + spec.revision()
                    + "' not found on " + environment.endpoint() + " (if it is private, "
                    + tokenAdvice + ")");
        }
        if (status == 401 || status == 403) {
            return new UserInputException("model " + spec.repoId() + " is gated or private (HTTP " + status + "); "
                    + tokenAdvice);
        }
        return new UserInputException(environment.endpoint() + " answered HTTP " + status + " for " + spec
                + "; try again later");
    }

    /** Python's urllib.parse.quote: unreserved characters stay, '/' stays only where asked. */
    static String percentEncode(String text, boolean keepSlash) {
        StringBuilder out = new StringBuilder();
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xFF;
            boolean unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '_' || c == '.' || c == '~' || (keepSlash && c == '/');
            if (unreserved) {
                out.append((char) c);
            } else {
                out.append('%').append(String.format(Locale.ROOT, "%02X", c));
            }
        }
        return out.toString();
    }

    /** ETags arrive quoted and sometimes weak ({@code W/"..."}); the blob name is the bare value. */
    static String normalizeEtag(String etag) {
        String value = etag.trim();
        if (value.startsWith("W/")) {
            value = value.substring(2);
        }
        return value.replace("\"", "");
    }

    /** File names from the server become paths: no absolute paths, no "..", no backslashes. */
    static boolean safeFileName(String name) {
        if (name.isEmpty() || name.startsWith("/") || name.contains("\\") || name.length() > 1024) {
            return false;
        }
        for (String part : name.split("/", -1)) {
            if (part.isEmpty() || part.equals(".") || part.equals("..")) {
                return false;
            }
        }
        return name.chars().noneMatch(c -> c < 0x20);
    }

    private static boolean sameOrigin(URI a, URI b) {
        return Objects.equals(a.getScheme(), b.getScheme()) && Objects.equals(a.getHost(), b.getHost())
                && effectivePort(a) == effectivePort(b);
    }

    private static int effectivePort(URI uri) {
        if (uri.getPort() >= 0) {
            return uri.getPort();
        }
        return "https".equals(uri.getScheme()) ? 443 : 80;
    }

    private static void close(HttpResponse<InputStream> response) {
        if (response != null) {
            try {
                response.body().close();
            } catch (IOException ignored) {
                // Closing only releases the connection; nothing to report.
            }
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK always has SHA-256", e);
        }
    }
}
