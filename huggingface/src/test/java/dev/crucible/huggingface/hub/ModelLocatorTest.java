package dev.crucible.huggingface.hub;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Resolution from a hand-made cache; every test either needs no network or proves it made none. */
class ModelLocatorTest {

    static final String MAIN = "1111111111111111111111111111111111111111";
    static final String V1 = "2222222222222222222222222222222222222222";

    @TempDir
    Path tmp;

    @Test
    void refsMainGivesTheSnapshot() throws IOException {
        Path cache = tmp.resolve("cache");
        Path snapshot = cachedModel(cache, "org/tiny", "main", MAIN);
        try (FakeHub hub = new FakeHub()) {
            ModelLocator locator = locator(Map.of("HF_HUB_CACHE", cache.toString(), "HF_ENDPOINT", hub.url()));
            assertEquals(snapshot, locator.resolve("org/tiny"));
            assertEquals(snapshot, locator.resolve("org/tiny@main"));
            assertEquals(List.of(), hub.requests(), "a complete cached model needs no network");
        }
    }

    @Test
    void revisionByNameAndByCommitHash() throws IOException {
        Path cache = tmp.resolve("cache");
        Path main = cachedModel(cache, "org/tiny", "main", MAIN);
        Path v1 = cachedModel(cache, "org/tiny", "v1.0", V1);
        ModelLocator locator = locator(Map.of("HF_HUB_CACHE", cache.toString(), "HF_HUB_OFFLINE", "1"));
        assertEquals(v1, locator.resolve("org/tiny@v1.0"));
        assertEquals(v1, locator.resolve("org/tiny@" + V1));
        assertEquals(main, locator.resolve("org/tiny@" + MAIN));
    }

    @Test
    void commitHashNeedsNoRef() throws IOException {
        Path cache = tmp.resolve("cache");
        Path snapshot = cache.resolve("models--org--tiny/snapshots/" + V1);
        Files.createDirectories(snapshot);
        Files.writeString(snapshot.resolve("config.json"), "{}");
        ModelLocator locator = locator(Map.of("HF_HUB_CACHE", cache.toString(), "HF_HUB_OFFLINE", "1"));
        assertEquals(snapshot, locator.resolve("org/tiny@" + V1));
    }

    @Test
    void offlineWithoutTheModelFailsWithoutTouchingTheNetwork() throws IOException {
        Path cache = tmp.resolve("cache");
        cachedModel(cache, "org/other", "main", MAIN);
        try (FakeHub hub = new FakeHub()) {
            ModelLocator locator = locator(Map.of("HF_HUB_CACHE", cache.toString(), "HF_HUB_OFFLINE", "1",
                    "HF_ENDPOINT", hub.url(), "HF_TOKEN", "hf_secret"));
            UserInputException e = assertThrows(UserInputException.class, () -> locator.resolve("org/tiny"));
            assertTrue(e.getMessage().contains(cache.resolve("models--org--tiny").toString()), e.getMessage());
            assertTrue(e.getMessage().contains("HF_HUB_OFFLINE"), e.getMessage());
            assertFalse(e.getMessage().contains("hf_secret"));
            assertFalse(e.getMessage().contains("\n"));
            // A ref to a revision that is not cached is just as missing.
            assertThrows(UserInputException.class, () -> locator.resolve("org/other@v2"));
            assertEquals(List.of(), hub.requests(), "offline must mean no request at all");
        }
    }

    @Test
    void offlineUsesAnIncompleteSnapshotAsItIs() throws IOException {
        Path cache = tmp.resolve("cache");
        Path snapshot = cache.resolve("models--org--tiny/snapshots/" + MAIN);
        Files.createDirectories(snapshot);
        Files.createDirectories(cache.resolve("models--org--tiny/refs"));
        Files.writeString(cache.resolve("models--org--tiny/refs/main"), MAIN);
        Files.writeString(snapshot.resolve("config.json"), "{}");
        ModelLocator locator = locator(Map.of("HF_HUB_CACHE", cache.toString(), "HF_HUB_OFFLINE", "true"));
        assertEquals(snapshot, locator.resolve("org/tiny"));
        assertFalse(ModelLocator.isComplete(snapshot));
    }

    @Test
    void anExistingLocalFolderWins() throws IOException {
        Path folder = Files.createDirectories(tmp.resolve("my-model"));
        ModelLocator locator = locator(Map.of("HF_HUB_CACHE", tmp.resolve("cache").toString(),
                "HF_HUB_OFFLINE", "1"));
        assertEquals(folder, locator.resolve(folder.toString()));
        UserInputException e = assertThrows(UserInputException.class,
                () -> locator.resolve(tmp.resolve("missing").toString()));
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
        Path home = Files.createDirectories(tmp.resolve("home/models/m"));
        ModelLocator withHome = ModelLocator.of(Map.of("HF_HUB_OFFLINE", "1"), tmp.resolve("home"),
                DownloadProgress.NONE);
        assertEquals(home, withHome.resolve("~/models/m"));
    }

    @Test
    void locateSaysWhereTheFolderCameFromAndHowToNameIt() throws IOException {
        Path cache = tmp.resolve("cache");
        Path snapshot = cachedModel(cache, "org/tiny", "v1.0", V1);
        ModelLocator locator = locator(Map.of("HF_HUB_CACHE", cache.toString(), "HF_HUB_OFFLINE", "1"));
        ModelLocator.Located hub = locator.locate("org/tiny@v1.0");
        assertEquals(snapshot, hub.folder());
        assertEquals("org/tiny", hub.reference());
        assertEquals(Optional.of("v1.0"), hub.revision());
        Path folder = Files.createDirectories(tmp.resolve("my-model"));
        ModelLocator.Located local = locator.locate(folder.toString());
        assertEquals(Optional.empty(), local.hubModel());
        assertEquals(folder.toAbsolutePath().normalize().toString(), local.reference());
        assertEquals(Optional.empty(), local.revision());
        Path relative = Path.of("").toAbsolutePath().relativize(folder.toAbsolutePath());
        assertEquals(folder.toAbsolutePath().normalize().toString(), locator.locate(relative.toString()).reference(),
                "a relative path would be taken for a Hub id by transformers and PEFT");
    }

    @Test
    void cacheLocationFollowsHuggingfaceHub() {
        Path home = Path.of("/home/u");
        assertEquals(Path.of("/c"), HubEnvironment.from(
                Map.of("HF_HUB_CACHE", "/c", "HF_HOME", "/h", "XDG_CACHE_HOME", "/x"), home).cacheDir());
        assertEquals(Path.of("/h/hub"), HubEnvironment.from(
                Map.of("HF_HOME", "/h", "XDG_CACHE_HOME", "/x"), home).cacheDir());
        assertEquals(Path.of("/x/huggingface/hub"), HubEnvironment.from(Map.of("XDG_CACHE_HOME", "/x"), home)
                .cacheDir());
        assertEquals(Path.of("/home/u/.cache/huggingface/hub"), HubEnvironment.from(Map.of(), home).cacheDir());
        assertEquals(Path.of("/home/u/hf/hub"), HubEnvironment.from(Map.of("HF_HOME", "~/hf"), home).cacheDir());
        assertEquals(Path.of("/home/u/.cache/huggingface/hub"),
                HubEnvironment.from(Map.of("HF_HUB_CACHE", ""), home).cacheDir(), "empty means unset");
    }

    @Test
    void endpointOfflineAndToken() {
        Path home = Path.of("/home/u");
        HubEnvironment defaults = HubEnvironment.from(Map.of(), home);
        assertEquals("https://huggingface.co", defaults.endpoint());
        assertFalse(defaults.offline());
        assertEquals(Optional.empty(), defaults.token());
        assertEquals("http://mirror:8080", HubEnvironment.from(Map.of("HF_ENDPOINT", "http://mirror:8080/"), home)
                .endpoint());
        for (String on : List.of("1", "ON", "yes", "True")) {
            assertTrue(HubEnvironment.from(Map.of("HF_HUB_OFFLINE", on), home).offline(), on);
        }
        for (String off : List.of("0", "false", "no", "")) {
            assertFalse(HubEnvironment.from(Map.of("HF_HUB_OFFLINE", off), home).offline(), off);
        }
        HubEnvironment withToken = HubEnvironment.from(Map.of("HF_TOKEN", "hf_secret"), home);
        assertEquals(Optional.of("hf_secret"), withToken.token());
        assertFalse(withToken.toString().contains("hf_secret"), withToken.toString());
    }

    @Test
    void specsAreValidated() {
        assertEquals(new ModelSpec("org/name", "main"), ModelSpec.parse("org/name"));
        assertEquals(new ModelSpec("gpt2", "main"), ModelSpec.parse("gpt2"));
        assertEquals(new ModelSpec("org/na.me-1_x", "refs/pr/1"), ModelSpec.parse("org/na.me-1_x@refs/pr/1"));
        assertTrue(ModelSpec.parse("org/name@" + MAIN).isCommit());
        assertFalse(ModelSpec.parse("org/name@v1").isCommit());
        for (String bad : List.of("", "a/b/c", "org/na me", "org--x/y", "org/name@", "org/name@../../etc",
                "org/name@refs//x", "/", "org/")) {
            assertThrows(UserInputException.class, () -> ModelSpec.parse(bad), bad);
        }
    }

    private ModelLocator locator(Map<String, String> env) {
        return ModelLocator.of(new HashMap<>(env), tmp.resolve("home"), DownloadProgress.NONE);
    }

    /** A cached model as huggingface_hub leaves it: blobs, relative links from the snapshot, a ref. */
    static Path cachedModel(Path cache, String repoId, String revision, String commit) throws IOException {
        HubCache layout = new HubCache(cache);
        Path blobs = Files.createDirectories(layout.repoFolder(repoId).resolve("blobs"));
        Path config = Files.writeString(blobs.resolve("cfg" + commit.substring(0, 8)), "{}");
        Path weights = Files.write(blobs.resolve("w" + commit.substring(0, 8)), new byte[16]);
        layout.link(repoId, commit, "config.json", config);
        layout.link(repoId, commit, "model.safetensors", weights);
        layout.writeRef(repoId, revision, commit);
        return layout.snapshot(repoId, commit);
    }
}
