package dev.crucible.runner.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import dev.crucible.runner.Main;
import dev.crucible.runner.RunnerEnvironment;
import dev.crucible.runner.text.ModelTokenizer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InitModelTest {
    @TempDir
    Path temp;

    private int run(StringWriter err, String... args) {
        return Main.run(args, new RunnerEnvironment(Map.of(), Optional.empty()), new PrintWriter(new StringWriter()), new PrintWriter(err));
    }

    /**
     * The tensors come from the family's layout but keep the order init-model has always written them in (the q, k
     * and v biases after the three weights), which the bytes of its folders, the demo model's among them, depend on.
     */
    @Test
    void tensorsFollowTheLayoutInTheOrderInitModelAlwaysWroteThem() {
        ModelInitializer.Spec qwen2 = new ModelInitializer.Spec(Architecture.QWEN2, 32, 1, 4, 2, 8, 64, 400, false,
                DType.F32, 1, 256, 10000, 0.02);
        assertEquals(java.util.List.of("model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
                        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                        "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.q_proj.bias",
                        "model.layers.0.self_attn.k_proj.bias", "model.layers.0.self_attn.v_proj.bias",
                        "model.layers.0.self_attn.o_proj.weight", "model.layers.0.post_attention_layernorm.weight",
                        "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
                        "model.layers.0.mlp.down_proj.weight", "model.norm.weight", "lm_head.weight"),
                ModelInitializer.tensors(qwen2).stream().map(t -> t.name()).toList());
    }

    @Test
    void writesALoadableModelFolderWithTokenizerAndTemplate() throws Exception {
        Path out = temp.resolve("qwen3-tiny");
        StringWriter err = new StringWriter();
        assertEquals(0, run(err, "init-model", "--like", "qwen3", "--hidden", "32", "--layers", "2", "--heads", "4",
                "--kv-heads", "2", "--head-dim", "16", "--no-tie-embeddings", "--dtype", "bfloat16", "--seed", "7", "--out", out.toString()), err.toString());
        ModelConfig config = ModelConfig.read(out);
        assertEquals(Architecture.QWEN3, config.architecture());
        assertEquals(16, config.headDim());
        assertTrue(config.qkNorm());
        assertFalse(config.tieWordEmbeddings());
        try (Checkpoint checkpoint = Checkpoint.open(out)) {
            assertEquals(DType.BF16, checkpoint.tensor("model.layers.1.self_attn.q_norm.weight").dtype());
            assertArrayEquals(new long[] {config.vocabSize(), 32}, checkpoint.tensor("lm_head.weight").shape());
            assertArrayEquals(new long[] {2 * 16, 32}, checkpoint.tensor("model.layers.0.self_attn.k_proj.weight").shape());
        }
        try (ModelTokenizer tokenizer = ModelTokenizer.load(out)) {
            String text = "Hello, wörld! 🐶 \"quotes\"\ttabs";
            assertEquals(text, tokenizer.decode(tokenizer.encode(text)), "byte fallback round-trips any text");
            assertEquals(7, tokenizer.encode("Hello, ").length, "printable ASCII and space are one token each");
            assertArrayEquals(new int[] {CharTokenizerFiles.idOf("<0xC3>"), CharTokenizerFiles.idOf("<0xB6>")}, tokenizer.encode("ö"),
                    "everything else goes through UTF-8 byte fallback");
            assertTrue(tokenizer.eosIds().contains(CharTokenizerFiles.idOf(CharTokenizerFiles.IM_END)));
            assertEquals(1, tokenizer.encodeWithoutSpecialTokens("<|im_start|>").length, "chat markers are single tokens");
            assertTrue(tokenizer.chatTemplate().isPresent());
        }
    }

    /** The count init-model prints is ModelCost's, read from the config it writes, and equals the tensors written. */
    @Test
    void theParameterCountIsTheWrittenTensors() {
        for (Architecture architecture : Architecture.values()) {
            for (boolean tied : new boolean[] {true, false}) {
                ModelInitializer.Spec spec = new ModelInitializer.Spec(architecture, 48, 3, 6, 2, 8, 96,
                        CharTokenizerFiles.vocabulary().size() + 5, tied, DType.F32, 1, 64, 10_000, 0.02);
                long written = ModelInitializer.tensors(spec).stream().mapToLong(t -> {
                    long count = 1;
                    for (long d : t.shape()) {
                        count *= d;
                    }
                    return count;
                }).sum();
                assertEquals(written, ModelInitializer.parameterCount(spec), architecture + (tied ? " tied" : " untied"));
            }
        }
    }

    /** With --merges the tokenizer is byte-pair: merges apply by rank, within words, and specials keep their ids. */
    @Test
    void mergesMakeTheTokenizerSubWord() throws Exception {
        Path merges = temp.resolve("merges.txt");
        Files.writeString(merges, "#version: 0.2\n\u2581 h\ne l\nel l\n\u2581h ell\nell o\n\u2581hell o\n");
        Path out = temp.resolve("bpe");
        StringWriter err = new StringWriter();
        assertEquals(0, run(err, "init-model", "--merges", merges.toString(), "--out", out.toString()), err.toString());
        assertEquals(CharTokenizerFiles.vocabulary().size() + 6, ModelConfig.read(out).vocabSize(),
                "six new tokens, one per merge");
        try (ModelTokenizer tokenizer = ModelTokenizer.load(out)) {
            int[] ids = tokenizer.encode("hello hello");
            assertEquals(3, ids.length, "h + ello + \u2581hello");
            assertEquals("hello hello", tokenizer.decode(ids));
            assertEquals("Hello, w\u00f6rld!", tokenizer.decode(tokenizer.encode("Hello, w\u00f6rld!")));
            assertArrayEquals(new int[] {CharTokenizerFiles.idOf(CharTokenizerFiles.IM_START)},
                    tokenizer.encodeWithoutSpecialTokens("<|im_start|>"));
        }
    }

    @Test
    void mergesOfUnknownTokensAreOneLineErrors() throws Exception {
        Path merges = temp.resolve("merges.txt");
        Files.writeString(merges, "\u2581 h\nzz q\n");
        StringWriter err = new StringWriter();
        assertEquals(2, run(err, "init-model", "--merges", merges.toString(), "--out", temp.resolve("x").toString()));
        assertEquals("error: " + merges + ":2: 'zz' is neither a character of the vocabulary nor made by an earlier "
                + "merge", err.toString().strip());
        assertFalse(Files.exists(temp.resolve("x")));
    }

    @Test
    void sameSeedSameBytesAndExistingFolderNeedsForce() throws Exception {
        Path a = temp.resolve("a");
        Path b = temp.resolve("b");
        StringWriter err = new StringWriter();
        assertEquals(0, run(err, "init-model", "--seed", "3", "--out", a.toString()));
        assertEquals(0, run(err, "init-model", "--seed", "3", "--out", b.toString()));
        assertEquals(sha(a.resolve("model.safetensors")), sha(b.resolve("model.safetensors")));
        StringWriter again = new StringWriter();
        assertEquals(2, run(again, "init-model", "--seed", "4", "--out", a.toString()));
        assertTrue(again.toString().contains("already exists; pass --force"), again.toString());
        assertEquals(sha(a.resolve("model.safetensors")), sha(b.resolve("model.safetensors")), "untouched");
        assertEquals(0, run(err, "init-model", "--seed", "4", "--force", "--out", a.toString()));
        assertFalse(sha(a.resolve("model.safetensors")).equals(sha(b.resolve("model.safetensors"))));
        try (var siblings = Files.list(temp)) {
            assertEquals(2, siblings.count(), "no staging folders left behind");
        }
    }

    @Test
    void badShapesAreUsageErrors() {
        StringWriter err = new StringWriter();
        assertEquals(2, run(err, "init-model", "--heads", "4", "--kv-heads", "3", "--out", temp.resolve("x").toString()));
        assertTrue(err.toString().startsWith("error: --heads 4 must be a multiple of --kv-heads 3"), err.toString());
        assertFalse(Files.exists(temp.resolve("x")));
        StringWriter arch = new StringWriter();
        assertEquals(2, run(arch, "init-model", "--like", "gpt2", "--out", temp.resolve("y").toString()));
        assertTrue(arch.toString().contains("not supported; supported:"), arch.toString());
    }

    private static String sha(Path file) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
    }
}
