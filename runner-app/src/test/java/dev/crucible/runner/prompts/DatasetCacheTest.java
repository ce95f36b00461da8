package dev.crucible.runner.prompts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.prompts.ParquetTestFiles.Codec;
import dev.crucible.runner.prompts.ParquetTestFiles.Column;
import dev.crucible.runner.prompts.ParquetTestFiles.Options;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A fake Hugging Face cache laid out as huggingface_hub writes datasets: refs, blobs, symlinked snapshots. */
class DatasetCacheTest {

    private static final String COMMIT = "0123456789abcdef0123456789abcdef01234567";
    private static final String OLD_COMMIT = "fedcba9876543210fedcba9876543210fedcba98";

    @TempDir
    Path dir;
    private Path work;
    private Map<String, String> env;

    @BeforeEach
    void fakeCache() throws IOException {
        Path hub = dir.resolve("hub");
        Path repo = hub.resolve("datasets--org--prompts");
        Files.createDirectories(repo.resolve("refs"));
        Files.writeString(repo.resolve("refs/main"), COMMIT);
        Files.writeString(repo.resolve("refs/v1"), OLD_COMMIT);
        shard(repo, COMMIT, "data/train-00001-of-00002.parquet", List.of("t3", "t4"));
        shard(repo, COMMIT, "data/train-00000-of-00002.parquet", List.of("t0", "t1", "t2"));
        shard(repo, COMMIT, "data/test-00000-of-00001.parquet", List.of("e0", "e1"));
        Files.writeString(repo.resolve("snapshots/" + COMMIT + "/README.md"), "# card mentioning train and test");
        shard(repo, OLD_COMMIT, "train.parquet", List.of("old"));
        work = Files.createDirectories(dir.resolve("work"));
        env = Map.of("HF_HUB_CACHE", hub.toString());
    }

    /** Writes the blob and links the snapshot file to it, as the real cache does. */
    private static void shard(Path repo, String commit, String file, List<String> prompts) throws IOException {
        Path blob = repo.resolve("blobs/" + commit.substring(0, 8) + file.hashCode());
        Files.createDirectories(blob.getParent());
        ParquetTestFiles.write(blob, new Options(Codec.SNAPPY, false, 2),
                List.of(new Column("text", prompts, false, true)), List.of());
        Path pointer = repo.resolve("snapshots/" + commit + "/" + file);
        Files.createDirectories(pointer.getParent());
        Files.createSymbolicLink(pointer, pointer.getParent().relativize(blob));
    }

    private List<String> load(String spec) {
        return PromptLoader.load(PromptSourceSpec.parse(spec), work, env);
    }

    @Test
    void datasetIdsResolveThroughRefsToSnapshotShardsInOrder() {
        assertEquals(List.of("t0", "t1", "t2", "t3", "t4"), load("org/prompts"), "train is the default split");
        assertEquals(List.of("t3", "t4"), load("hf:org/prompts@train[-2:]"));
        assertEquals(List.of("e0"), load("hf:org/prompts:text@test[:1]"));
    }

    @Test
    void revisionsComeFromTheirRef() {
        PromptSourceSpec spec = PromptSourceSpec.parse("org/prompts").with("good_prompts", "revision", "v1");
        assertEquals(List.of("old"), PromptLoader.load(spec, work, env));
    }

    @Test
    void hfHomeLocatesTheCacheToo() {
        Map<String, String> viaHome = Map.of("HF_HOME", dir.toString());
        assertEquals(List.of("e0", "e1"), PromptLoader.load(PromptSourceSpec.parse("org/prompts@test"), work,
                viaHome));
        assertEquals(dir.resolve("hub"), DatasetCache.from(viaHome).root());
    }

    @Test
    void aDatasetNotInTheCacheSaysWhereAndHowToGetIt() {
        String message = assertThrows(UserInputException.class, () -> load("other/name@train")).getMessage();
        assertTrue(message.contains(dir.resolve("hub/datasets--other--name").toString()), message);
        assertTrue(message.contains("huggingface-cli download --repo-type dataset other/name"), message);
        assertTrue(!message.contains("\n"));
    }

    @Test
    void aMissingSplitListsWhatThereIs() {
        String message = assertThrows(UserInputException.class, () -> load("org/prompts@validation")).getMessage();
        assertTrue(message.contains("no files for split 'validation'"), message);
        assertTrue(message.contains("data/test-00000-of-00001.parquet"), message);
    }

    @Test
    void aLocalPathWinsOverADatasetIdOfTheSameShape() throws IOException {
        Files.createDirectories(work.resolve("org/prompts"));
        Files.writeString(work.resolve("org/prompts/train.jsonl"), "{\"text\": \"local\"}\n");
        Files.writeString(work.resolve("org/prompts/test.jsonl"), "{\"text\": \"local test\"}\n");
        assertEquals(List.of("local"), load("org/prompts"));
        assertEquals(List.of("local test"), load("org/prompts@test"));
    }

    @Test
    void subsetsMustBeChosen() throws IOException {
        Path hub = Path.of(env.get("HF_HUB_CACHE"));
        Path repo = hub.resolve("datasets--org--multi");
        Files.createDirectories(repo.resolve("refs"));
        Files.writeString(repo.resolve("refs/main"), COMMIT);
        shard(repo, COMMIT, "default/train/0000.parquet", List.of("d0"));
        shard(repo, COMMIT, "extra/train/0000.parquet", List.of("x0"));
        String message = assertThrows(UserInputException.class, () -> load("org/multi")).getMessage();
        assertTrue(message.contains("several subsets (default, extra)"), message);
        assertEquals(List.of("x0"), load("hf:org/multi/extra"));
        assertTrue(assertThrows(UserInputException.class, () -> load("hf:org/multi/../../x")).getMessage()
                .contains("has no folder"));
    }

    @Test
    void slicesFromTheStartReadOnlyTheShardsTheyNeed() throws IOException {
        Path data = Files.createDirectories(work.resolve("big/data"));
        ParquetTestFiles.write(data.resolve("train-00000-of-00002.parquet"), new Options(Codec.ZSTD, true, 2),
                List.of(new Column("text", List.of("a", "b", "c", "d"), false, false)), List.of());
        Files.writeString(data.resolve("train-00001-of-00002.parquet"), "damaged beyond repair");
        assertEquals(List.of("a", "b", "c"), load("big@train[:3]"), "the damaged second shard is never opened");
        assertEquals(List.of("b", "c"), load("big[1:3]"));
        String message = assertThrows(UserInputException.class, () -> load("big@train[-1:]")).getMessage();
        assertTrue(message.contains("train-00001-of-00002.parquet"), message);
    }

    @Test
    void splitWordsDoNotMatchInsideLongerWords() throws IOException {
        Path data = Files.createDirectories(work.resolve("local"));
        Files.writeString(data.resolve("training_notes.jsonl"), "{\"text\": \"not a split\"}\n");
        Files.writeString(data.resolve("harmful_train.csv"), "text\nreal\n");
        assertEquals(List.of("real"), load("local@train"));
    }
}
