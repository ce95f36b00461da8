package dev.crucible.huggingface.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.huggingface.hub.FakeHub.Answer;
import dev.crucible.huggingface.hub.FakeHub.Request;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Downloads against a fake hub and a fake CDN, both on loopback and both started by the test. */
class HubDownloadTest {

    static final String COMMIT = "0123456789abcdef0123456789abcdef01234567";
    static final String CONFIG_ETAG = "a3c1e2f0a3c1e2f0a3c1e2f0a3c1e2f0a3c1e2f0";
    static final String TOKEN = "hf_secret_token";

    @TempDir
    Path tmp;

    FakeHub hub;
    FakeHub cdn;
    Path cache;

    @BeforeEach
    void start() {
        hub = new FakeHub();
        cdn = new FakeHub();
        cache = tmp.resolve("cache");
    }

    @AfterEach
    void stop() {
        hub.close();
        cdn.close();
    }

    @Test
    void downloadsIntoTheHuggingfaceCacheLayout() throws IOException {
        byte[] weights = safetensorsBytes("w", 1f, 2f, 3f);
        byte[] tokenizer = "{\"model\":{}}".getBytes(StandardCharsets.UTF_8);
        hub.answer("/api/models/org/tiny/revision/main", Answer.json(info(COMMIT, "config.json", "tokenizer.json",
                "model.safetensors", "pytorch_model.bin", "README.md", "onnx/model.onnx", "training_args.pt")));
        hub.answer("/org/tiny/resolve/" + COMMIT + "/config.json",
                Answer.bytes("{\"model_type\":\"llama\"}".getBytes(StandardCharsets.UTF_8),
                        Map.of("ETag", "\"" + CONFIG_ETAG + "\"")));
        // No ETag: the blob is named by the content's sha256.
        hub.answer("/org/tiny/resolve/" + COMMIT + "/tokenizer.json", Answer.bytes(tokenizer, Map.of()));
        lfsFile("org/tiny", "model.safetensors", weights, sha256(weights));

        Map<String, long[]> lastProgress = new ConcurrentHashMap<>();
        ModelLocator locator = ModelLocator.of(env(false), tmp.resolve("home"),
                (file, done, total) -> lastProgress.put(file, new long[] {done, total}));
        Path snapshot = locator.resolve("org/tiny");

        Path repo = cache.resolve("models--org--tiny");
        assertEquals(repo.resolve("snapshots").resolve(COMMIT), snapshot);
        assertEquals(COMMIT, Files.readString(repo.resolve("refs/main")));
        assertEquals(Path.of("../../blobs/" + CONFIG_ETAG), Files.readSymbolicLink(snapshot.resolve("config.json")));
        assertEquals(Path.of("../../blobs/" + sha256(weights)),
                Files.readSymbolicLink(snapshot.resolve("model.safetensors")));
        assertEquals(Path.of("../../blobs/" + sha256(tokenizer)),
                Files.readSymbolicLink(snapshot.resolve("tokenizer.json")));
        assertArrayEquals(weights, Files.readAllBytes(snapshot.resolve("model.safetensors")));
        try (Checkpoint checkpoint = Checkpoint.open(snapshot)) {
            assertArrayEquals(new float[] {1f, 2f, 3f}, checkpoint.tensor("w").toFloatArray());
        }
        try (Stream<Path> snapshotFiles = Files.list(snapshot); Stream<Path> blobs = Files.list(repo.resolve("blobs"))) {
            assertEquals(List.of("config.json", "model.safetensors", "tokenizer.json"),
                    snapshotFiles.map(p -> p.getFileName().toString()).sorted().toList());
            assertTrue(blobs.noneMatch(p -> p.getFileName().toString().endsWith(".tmp")), "no temporary files");
        }
        assertArrayEquals(new long[] {weights.length, weights.length}, lastProgress.get("model.safetensors"));

        for (Request request : hub.requests()) {
            assertEquals("Bearer " + TOKEN, request.authorization(), request.rawPath());
            assertFalse(request.rawPath().matches(".*(\\.bin|\\.pt|README\\.md|onnx.*)$"), request.rawPath());
        }
        assertEquals(List.of(new Request("GET", "/blobs/model.safetensors", null)), cdn.requests(),
                "the token must not follow the redirect to another host");

        int before = hub.requests().size();
        assertEquals(snapshot, locator.resolve("org/tiny"));
        assertEquals(before, hub.requests().size(), "the second resolve is served by the cache");
    }

    @Test
    void shardedWeightsFollowTheIndexOnly() throws IOException {
        Path export = Files.createDirectory(tmp.resolve("export"));
        SafetensorsWriter.writeModel(export, List.of(
                WritableTensor.ofFloats("a", DType.F32, new long[] {2}, new float[] {1f, 2f}),
                WritableTensor.ofFloats("b", DType.F32, new long[] {2}, new float[] {3f, 4f})), Map.of(), 8);
        String shard1 = "model-00001-of-00002.safetensors";
        String shard2 = "model-00002-of-00002.safetensors";
        hub.answer("/api/models/org/big/revision/main", Answer.json(info(COMMIT, "config.json",
                "model.safetensors.index.json", shard1, shard2, "consolidated.safetensors")));
        hub.answer("/org/big/resolve/" + COMMIT + "/config.json", Answer.bytes(new byte[] {'{', '}'}, Map.of()));
        for (String file : List.of("model.safetensors.index.json", shard1, shard2)) {
            byte[] bytes = Files.readAllBytes(export.resolve(file));
            lfsFile("org/big", file, bytes, sha256(bytes));
        }
        Path snapshot = ModelLocator.of(env(false), tmp.resolve("home"), DownloadProgress.NONE).resolve("org/big");
        try (Checkpoint checkpoint = Checkpoint.open(snapshot)) {
            assertArrayEquals(new float[] {3f, 4f}, checkpoint.tensor("b").toFloatArray());
        }
        assertTrue(ModelLocator.isComplete(snapshot));
        assertTrue(hub.requests().stream().noneMatch(r -> r.rawPath().contains("consolidated")));
    }

    @Test
    void revisionsAreQuotedInTheApiUrlAndKeptAsRefs() throws IOException {
        byte[] weights = safetensorsBytes("w", 5f);
        hub.answer("/api/models/org/tiny/revision/refs%2Fpr%2F1", Answer.json(info(COMMIT, "model.safetensors")));
        lfsFile("org/tiny", "model.safetensors", weights, sha256(weights));
        ModelLocator locator = ModelLocator.of(env(false), tmp.resolve("home"), DownloadProgress.NONE);
        Path snapshot = locator.resolve("org/tiny@refs/pr/1");
        assertEquals(COMMIT, Files.readString(cache.resolve("models--org--tiny/refs/refs/pr/1")));
        assertEquals(cache.resolve("models--org--tiny/snapshots/" + COMMIT), snapshot);
    }

    @Test
    void unauthorizedSaysGatedOrPrivateAndToSetTheToken() {
        hub.answer("/api/models/org/gated/revision/main", Answer.status(401, Map.of()));
        Map<String, String> env = env(false);
        env.remove("HF_TOKEN");
        UserInputException e = assertThrows(UserInputException.class,
                () -> ModelLocator.of(env, tmp.resolve("home"), DownloadProgress.NONE).resolve("org/gated"));
        assertTrue(e.getMessage().contains("gated or private"), e.getMessage());
        assertTrue(e.getMessage().contains("set HF_TOKEN"), e.getMessage());
        assertNull(hub.requests().getFirst().authorization(), "no token, no header");

        hub.answer("/api/models/org/gated/revision/main", Answer.status(403, Map.of("X-Error-Code", "GatedRepo")));
        UserInputException gated = assertThrows(UserInputException.class,
                () -> ModelLocator.of(env(false), tmp.resolve("home"), DownloadProgress.NONE).resolve("org/gated"));
        assertTrue(gated.getMessage().contains("is gated"), gated.getMessage());
        assertTrue(gated.getMessage().contains("HF_TOKEN"), gated.getMessage());
        assertFalse(gated.getMessage().contains(TOKEN), "the token is never printed");
        assertFalse(Files.exists(cache.resolve("models--org--gated/refs")));
    }

    @Test
    void notFoundNamesTheModelAndRevision() {
        ModelLocator locator = ModelLocator.of(env(false), tmp.resolve("home"), DownloadProgress.NONE);
        UserInputException missing = assertThrows(UserInputException.class, () -> locator.resolve("org/nope"));
        assertTrue(missing.getMessage().contains("model org/nope or its revision 'main' not found"),
                missing.getMessage());
        hub.answer("/api/models/org/tiny/revision/v9", Answer.status(404, Map.of("X-Error-Code", "RevisionNotFound")));
        UserInputException revision = assertThrows(UserInputException.class, () -> locator.resolve("org/tiny@v9"));
        assertTrue(revision.getMessage().contains("revision 'v9' of model org/tiny not found"),
                revision.getMessage());
    }

    @Test
    void pickleOnlyRepositoriesAreRefusedBeforeAnyDownload() {
        hub.answer("/api/models/org/old/revision/main",
                Answer.json(info(COMMIT, "config.json", "pytorch_model.bin", "tokenizer.json")));
        UserInputException e = assertThrows(UserInputException.class,
                () -> ModelLocator.of(env(false), tmp.resolve("home"), DownloadProgress.NONE).resolve("org/old"));
        assertTrue(e.getMessage().contains("only pickle weights (pytorch_model.bin)"), e.getMessage());
        assertEquals(List.of("/api/models/org/old/revision/main"),
                hub.requests().stream().map(Request::rawPath).toList());
    }

    @Test
    void aCorruptedDownloadLeavesNoBlobAndNoRef() throws IOException {
        byte[] weights = safetensorsBytes("w", 1f);
        hub.answer("/api/models/org/tiny/revision/main", Answer.json(info(COMMIT, "model.safetensors")));
        lfsFile("org/tiny", "model.safetensors", weights, "f".repeat(64));
        UserInputException e = assertThrows(UserInputException.class,
                () -> ModelLocator.of(env(false), tmp.resolve("home"), DownloadProgress.NONE).resolve("org/tiny"));
        assertTrue(e.getMessage().contains("corrupted"), e.getMessage());
        try (Stream<Path> blobs = Files.list(cache.resolve("models--org--tiny/blobs"))) {
            assertEquals(List.of(), blobs.toList());
        }
        assertFalse(Files.exists(cache.resolve("models--org--tiny/refs/main")));
    }

    @Test
    void unreachableHubSuggestsOfflineMode() {
        Map<String, String> env = env(false);
        String url = hub.url();
        hub.close();
        env.put("HF_ENDPOINT", url);
        UserInputException e = assertThrows(UserInputException.class,
                () -> ModelLocator.of(env, tmp.resolve("home"), DownloadProgress.NONE).resolve("org/tiny"));
        assertTrue(e.getMessage().contains("cannot reach"), e.getMessage());
        assertTrue(e.getMessage().contains("HF_HUB_OFFLINE=1"), e.getMessage());
    }

    /** An LFS file as the Hub serves it: a redirect carrying X-Linked-Etag and X-Linked-Size, then the CDN. */
    private void lfsFile(String repo, String file, byte[] bytes, String linkedEtag) {
        hub.answer("/" + repo + "/resolve/" + COMMIT + "/" + file, Answer.status(302, Map.of(
                "Location", cdn.url() + "/blobs/" + file,
                "X-Linked-Etag", "\"" + linkedEtag + "\"",
                "X-Linked-Size", Integer.toString(bytes.length),
                "ETag", "W/\"not-this-one\"")));
        cdn.answer("/blobs/" + file, Answer.bytes(bytes, Map.of("ETag", "\"cdn-etag\"")));
    }

    private Map<String, String> env(boolean offline) {
        Map<String, String> env = new HashMap<>();
        env.put("HF_HUB_CACHE", cache.toString());
        env.put("HF_ENDPOINT", hub.url());
        env.put("HF_TOKEN", TOKEN);
        if (offline) {
            env.put("HF_HUB_OFFLINE", "1");
        }
        return env;
    }

    private static String info(String commit, String... files) {
        StringBuilder json = new StringBuilder("{\"id\":\"x\",\"sha\":\"" + commit + "\",\"siblings\":[");
        for (int i = 0; i < files.length; i++) {
            json.append(i == 0 ? "" : ",").append("{\"rfilename\":\"").append(files[i]).append("\"}");
        }
        return json.append("]}").toString();
    }

    private byte[] safetensorsBytes(String name, float... values) throws IOException {
        Path file = tmp.resolve("payload-" + System.nanoTime() + ".safetensors");
        SafetensorsWriter.write(file,
                List.of(WritableTensor.ofFloats(name, DType.F32, new long[] {values.length}, values)), Map.of());
        return Files.readAllBytes(file);
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
