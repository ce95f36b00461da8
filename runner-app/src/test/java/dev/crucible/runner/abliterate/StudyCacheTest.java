package dev.crucible.runner.abliterate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.scoring.PromptSet;
import dev.crucible.runner.export.FileHashes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The study's cache: what it keeps, under which key, and what it says when a study's inputs changed. */
class StudyCacheTest {
    @TempDir
    Path temp;

    private static final Abliterator.PromptGroup SET = new Abliterator.PromptGroup("bad-prompts", List.of("a", "b"), Optional.of("Be kind."));

    private Path model() throws Exception {
        Path dir = Files.createDirectories(temp.resolve("model"));
        Files.writeString(dir.resolve("config.json"), "{}");
        Files.write(dir.resolve("model.safetensors"), new byte[] {1, 2, 3, 4});
        Files.writeString(dir.resolve("README.md"), "not part of the model");
        return dir;
    }

    private static Abliterator.Prompts prompts(Abliterator.PromptGroup badTrain) {
        return new Abliterator.Prompts(badTrain, SET, SET, SET);
    }

    private static StudyCache.Prepared prepared() {
        return new StudyCache.Prepared("<think>\n\n</think>\n\n", new RefusalDirections(new float[][] {{1, 0}, {0.6f, 0.8f}, {0, -1}}),
                Map.of(PromptSet.HARMFUL, List.of("I cannot help with that.", "Sorry, no.")),
                Map.of(PromptSet.HARMLESS, new float[][] {{-0.1f, -2.4f, -3f}, {-1f, -0.5f, -7.25f}}));
    }

    @Test
    void keepsWhatTheTrialsNeedUnderItsKey() throws Exception {
        Path model = model();
        StudyCache.Inputs inputs = StudyCache.Inputs.of(model, prompts(SET), Map.of());
        assertEquals(List.of("config.json", "model.safetensors"), List.copyOf(new java.util.TreeSet<>(inputs.modelFiles().keySet())));
        assertEquals(FileHashes.sha256(model.resolve("model.safetensors")), inputs.modelFiles().get("model.safetensors").sha256());
        Map<String, Object> computation = new LinkedHashMap<>(Map.of("backend", "cpu", "threads", 1, "winsorization_quantile", 1.0));
        StudyCache.Key key = new StudyCache.Key(inputs, computation);
        StudyCache.in(temp).save(key, prepared());

        StudyCache.Prepared back = StudyCache.in(temp).lookup(key).orElseThrow();
        assertEquals(prepared().responsePrefix(), back.responsePrefix());
        assertArrayEquals(prepared().directions().directions(), back.directions().directions());
        assertEquals(prepared().baseResponses(), back.baseResponses());
        assertArrayEquals(prepared().baseLogProbs().get(PromptSet.HARMLESS), back.baseLogProbs().get(PromptSet.HARMLESS));
        assertFalse(back.baseLogProbs().containsKey(PromptSet.HARMFUL), "only what was computed");

        // Another computation (here: threads) computes again; other inputs too.
        computation.put("threads", 2);
        assertTrue(StudyCache.in(temp).lookup(new StudyCache.Key(inputs, computation)).isEmpty());
        computation.put("threads", 1);
        Abliterator.PromptGroup other = new Abliterator.PromptGroup("bad-prompts", List.of("a", "c"), SET.systemPrompt());
        assertTrue(StudyCache.in(temp).lookup(new StudyCache.Key(StudyCache.Inputs.of(model, prompts(other), Map.of()), computation)).isEmpty());
        assertTrue(StudyCache.in(temp).lookup(new StudyCache.Key(inputs, computation)).isPresent());
    }

    @Test
    void saysWhatChanged() throws Exception {
        Path model = model();
        StudyCache.Inputs before = StudyCache.Inputs.of(model, prompts(SET), Map.of());
        assertEquals(Optional.empty(), before.difference(StudyCache.Inputs.of(model, prompts(SET), before.modelFiles())));

        Abliterator.PromptGroup otherSystem = new Abliterator.PromptGroup("bad-prompts", SET.texts(), Optional.of("Be brief."));
        assertEquals(Optional.of("other prompts (the bad_prompts set changed)"),
                before.difference(StudyCache.Inputs.of(model, prompts(otherSystem), Map.of())));
        // Texts that join to the same string are still other prompts.
        Abliterator.PromptGroup joined = new Abliterator.PromptGroup("bad-prompts", List.of("ab"), SET.systemPrompt());
        assertTrue(before.difference(StudyCache.Inputs.of(model, prompts(joined), Map.of())).isPresent());

        Path weights = Files.write(model.resolve("model.safetensors"), new byte[] {1, 2, 3, 5});
        // Same size; a rewrite within the file system's clock tick (a few ms) would keep the time the fingerprint
        // trusts, which no real edit of a model does.
        Files.setLastModifiedTime(weights, java.nio.file.attribute.FileTime.fromMillis(
                Files.getLastModifiedTime(weights).toMillis() + 1000));
        String changed = before.difference(StudyCache.Inputs.of(model, prompts(SET), before.modelFiles())).orElseThrow();
        assertTrue(changed.startsWith("other model files (model.safetensors changed: SHA-256 "), changed);
        Files.writeString(model.resolve("tokenizer.json"), "{}");
        Files.write(model.resolve("model.safetensors"), new byte[] {1, 2, 3, 4});
        assertEquals(Optional.of("other model files (tokenizer.json is new in " + model.toAbsolutePath() + ")"),
                before.difference(StudyCache.Inputs.of(model, prompts(SET), Map.of())));
    }

    @Test
    void aFileIsHashedOnceUntilItsSizeOrTimeChanges() throws Exception {
        Path model = model();
        Path weights = model.resolve("model.safetensors");
        Map<String, ModelFingerprint.FileStamp> first = ModelFingerprint.of(model, Map.of());
        ModelFingerprint.FileStamp stamp = first.get("model.safetensors");
        // A stamp that matches size and time is believed without reading the file: prove it with a made-up hash.
        Map<String, ModelFingerprint.FileStamp> believed = Map.of("model.safetensors",
                new ModelFingerprint.FileStamp(stamp.bytes(), stamp.modifiedMillis(), "f".repeat(64)));
        assertEquals("f".repeat(64), ModelFingerprint.of(model, believed).get("model.safetensors").sha256());
        Files.setLastModifiedTime(weights, FileTime.fromMillis(stamp.modifiedMillis() + 1000));
        assertEquals(stamp.sha256(), ModelFingerprint.of(model, believed).get("model.safetensors").sha256(), "read again");
    }

    @Test
    void aHubCacheFileIsNamedByItsHash() throws Exception {
        Path blobs = Files.createDirectories(temp.resolve("models--org--name/blobs"));
        String sha = "0123456789abcdef".repeat(4);
        Files.write(blobs.resolve(sha), new byte[] {9, 9});
        Path snapshot = Files.createDirectories(temp.resolve("models--org--name/snapshots/" + "a".repeat(40)));
        Files.createSymbolicLink(snapshot.resolve("model.safetensors"), Path.of("../../blobs/" + sha));
        assertEquals(sha, ModelFingerprint.of(snapshot, Map.of()).get("model.safetensors").sha256());
    }

    @Test
    void aDamagedFileIsNoCache() throws Exception {
        Files.writeString(temp.resolve(StudyCache.FILE_NAME), "not safetensors");
        StudyCache cache = StudyCache.in(temp);
        assertTrue(cache.storedInputs().isEmpty());
        assertEquals(Map.of(), cache.earlierModelFiles());
    }
}
